// Command form is the skillhost "form" plugin: its skill form_fill fills a
// form over a multi-turn A2A task. The first message names the fields
// ({"fields": ["name", "email"]}); the skill asks for each field in turn
// (the task becomes input-required, the question names the field), each
// follow-up message's text answers it, and the task completes with the
// object of the answers ({"name": …, "email": …}) as its artifact's data.
//
// It keeps no state of its own: every turn reads the task's history (the
// fields from the first message, the answers from the follow-ups).
package main
