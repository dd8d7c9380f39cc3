// Package plugin owns everything between a folder of plugins on disk and a
// callable skill: strict manifest decoding and validation, the operator's
// policy, the registry of loaded plugins, skill execution routing and hot
// reload.
//
// A plugin is a folder holding plugin.yaml and its .wasm module. LoadManifest
// decodes the manifest strictly (unknown fields are errors) and validates it;
// every error names the file and the field:
//
//	plugins/text/plugin.yaml: skills[1].id: must match [a-z0-9][a-z0-9_-]*
//
// A Registry compiles each plugin once through the sandbox runtime, caps its
// limits by the Policy, and routes Execute calls to the skill's export after
// validating the input against the skill's input_schema:
//
//	reg := plugin.NewRegistry(rt, plugin.RegistryOptions{Policy: pol})
//	if err := reg.LoadDir(ctx, "plugins"); err != nil {
//		log.Print(err) // broken plugins are reported; the others still load
//	}
//	go reg.Watch(ctx, "plugins") // hot reload until ctx ends
//	out, err := reg.Execute(ctx, plugin.Call{SkillID: "uppercase", Input: []byte(`{"text":"hi"}`)})
//
// Snapshots are immutable views of the loaded plugins; their Revision changes
// on every change, which the Agent Card uses as its ETag. A replaced or
// removed plugin keeps serving the calls already in flight; its module is
// closed when the last of them returns.
package plugin
