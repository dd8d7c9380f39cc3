package a2a

import (
	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/skillhost/skillhost/host/internal/a2a/v03"
)

// Reached names the skill a blocking send ran, read from the result its
// method returned (the task's metadata records its skill and plugin): the
// host's access line names it without anything written into the call's
// context. "" for other methods and results (a stream's task runs after
// its method returned).
func Reached(method string, result any) (plugin, skill string) {
	var meta map[string]any
	switch r := result.(type) {
	case a2av1.StreamResponse: // SendMessage
		if t, ok := r.Event.(*a2av1.Task); ok && method == "SendMessage" {
			meta = t.Metadata
		}
	case *a2av1.Task: // SendMessage over gRPC
		if method == "SendMessage" {
			meta = r.Metadata
		}
	default: // message/send: a v0.3 task (v03.Task)
		if method == "message/send" {
			meta, _ = v03.TaskMetadata(result)
		}
	}
	plugin, _ = meta["plugin"].(string)
	skill, _ = meta[MetaSkillID].(string)
	return plugin, skill
}
