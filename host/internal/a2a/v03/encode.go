package v03

import (
	"context"
	"encoding/json"
	"fmt"

	a2alegacy "github.com/a2aproject/a2a-go/a2a"
	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/skillhost/skillhost/host/fault"
)

// Task is t in the v0.3 shape.
func Task(t *a2av1.Task) any { return a2av0.FromV1Task(t) }

// TaskMetadata is the metadata of a task in the v0.3 shape (a result of
// Task); false for any other value.
func TaskMetadata(v any) (map[string]any, bool) {
	t, ok := v.(*a2alegacy.Task)
	if !ok {
		return nil, false
	}
	return t.Metadata, true
}

// ListTasksResponse is r in the v0.3 shape.
func ListTasksResponse(r *a2av1.ListTasksResponse) any { return a2av0.FromV1ListTasksResponse(r) }

// PushConfig is c in the v0.3 shape.
func PushConfig(c *a2av1.PushConfig) any { return a2av0.FromV1PushConfig(c) }

// PushConfigs is cs in the v0.3 shape.
func PushConfigs(cs []*a2av1.PushConfig) any { return a2av0.FromV1PushConfigs(cs) }

// Event is a stream event in the v0.3 shape (an Internal fault when it
// has none).
func Event(ev a2av1.Event) (any, error) {
	out, err := a2av0.FromV1Event(ev)
	if err != nil {
		return nil, fault.Wrap(fault.Internal, fault.ReasonInternal, err, "")
	}
	return out, nil
}

// Card is card in the v0.3 shape, without null members (a2av0 leaves an
// empty skill list nil).
func Card(card *a2av1.AgentCard) *a2alegacy.AgentCard {
	out := a2av0.FromV1AgentCard(card)
	if out.Skills == nil {
		out.Skills = []a2alegacy.AgentSkill{}
	}
	if out.AdditionalInterfaces == nil {
		out.AdditionalInterfaces = []a2alegacy.AgentInterface{}
	}
	return out
}

// Union encodes card as the union of the v1.0 and v0.3 shapes (top-level
// url, preferredTransport, protocolVersion, additionalInterfaces beside
// supportedInterfaces), exactly as a2a-go's a2av0 card producer serves it.
// A card with security schemes gets the v1.0 form of each scheme merged
// into a2av0's v0.3 form, and requirements (the v1.0 securityRequirements
// JSON) in place of a2av0's.
func Union(ctx context.Context, card *a2av1.AgentCard, requirements json.RawMessage) ([]byte, error) {
	prod, ok := a2av0.NewStaticAgentCardProducer(card).(a2asrv.AgentCardJSONProducer)
	if !ok {
		return nil, fmt.Errorf("a2av0 card producer does not produce JSON")
	}
	b, err := prod.CardJSON(ctx)
	if err != nil {
		return nil, fmt.Errorf("encode union card: %w", err)
	}
	if len(card.SecuritySchemes) == 0 {
		return b, nil
	}
	return mergeSchemes(b, card, requirements)
}

// mergeSchemes replaces securityRequirements (see agentcard.MarshalV1) and adds
// the v1.0 form of each security scheme (e.g. "apiKeySecurityScheme") to
// a2av0's v0.3 form ("type", "in", "name"), so parsers of both versions
// read them.
func mergeSchemes(union []byte, card *a2av1.AgentCard, requirements json.RawMessage) ([]byte, error) {
	v1, err := json.Marshal(card.SecuritySchemes)
	if err != nil {
		return nil, fmt.Errorf("encode security schemes: %w", err)
	}
	var top map[string]json.RawMessage
	var compat, modern map[string]map[string]json.RawMessage
	if err := json.Unmarshal(union, &top); err != nil {
		return nil, fmt.Errorf("decode union card: %w", err)
	}
	if err := json.Unmarshal(top["securitySchemes"], &compat); err != nil {
		return nil, fmt.Errorf("decode union schemes: %w", err)
	}
	if err := json.Unmarshal(v1, &modern); err != nil {
		return nil, fmt.Errorf("decode v1 schemes: %w", err)
	}
	for name, fields := range modern {
		if compat[name] == nil {
			compat[name] = map[string]json.RawMessage{}
		}
		for k, v := range fields {
			compat[name][k] = v
		}
	}
	merged, err := json.Marshal(compat)
	if err != nil {
		return nil, fmt.Errorf("encode union schemes: %w", err)
	}
	top["securitySchemes"] = merged
	top["securityRequirements"] = requirements
	out, err := json.MarshalIndent(top, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode union card: %w", err)
	}
	return out, nil
}
