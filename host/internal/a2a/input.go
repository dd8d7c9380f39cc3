package a2a

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/a2a/agentcard"
	"github.com/skillhost/skillhost/host/internal/jsonrpc"
	"github.com/skillhost/skillhost/host/internal/plugin"
)

// Caps on what a client controls in a message.
const (
	MaxParts       = 64
	maxListedSkill = 50
	maxSkillIDLen  = 256
)

// MetaSkillID is the metadata key naming the skill a message is for.
const MetaSkillID = "skillId"

// tenantOf is a request's tenant: the agent the endpoint is restricted to
// (POST /agents/{name}/rpc), else the request's own tenant. A request
// naming another tenant than its endpoint's is InvalidParams.
func tenantOf(ctx context.Context, tenant string) (string, error) {
	agent := jsonrpc.TransportFrom(ctx).Agent
	switch {
	case agent == "":
		return tenant, nil
	case tenant == "" || tenant == agent:
		return agent, nil
	}
	return "", fault.Newf(fault.InvalidParams, fault.ReasonUnknownTenant, "tenant %q is not this endpoint's agent %q", truncate(tenant, 64), truncate(agent, 64))
}

// route picks the skill of a message: message.metadata.skillId, else the
// request's metadata.skillId, else the only skill in scope (one plugin when
// tenant names it, else the host). It returns InvalidParams listing the
// skills when it cannot decide.
func route(snap *plugin.Snapshot, tenant string, req *a2av1.SendMessageRequest) (*plugin.Plugin, *plugin.Skill, error) {
	if snap == nil {
		return nil, nil, fault.New(fault.InvalidParams, fault.ReasonUnknownSkill, "no skills are loaded")
	}
	scope := snap.Plugins
	if tenant != "" {
		p, ok := pluginNamed(snap.Plugins, tenant)
		if !ok {
			return nil, nil, fault.Newf(fault.InvalidParams, fault.ReasonUnknownTenant, "no agent (plugin) named %q", truncate(tenant, 64))
		}
		scope = []*plugin.Plugin{p}
	}
	id, err := skillIDOf(req.Message.Metadata)
	if err == nil && id == "" {
		id, err = skillIDOf(req.Metadata)
	}
	if err != nil {
		return nil, nil, err
	}
	var ids []string
	for _, p := range scope {
		for _, s := range p.Manifest.Skills {
			if id != "" && s.ID == id {
				return p, s, nil
			}
			ids = append(ids, s.ID)
		}
	}
	slices.Sort(ids)
	if id == "" && len(ids) == 1 {
		p, s, _ := findSkill(scope, ids[0])
		return p, s, nil
	}
	listed := ids
	if len(listed) > maxListedSkill {
		listed = listed[:maxListedSkill]
	}
	msg := fmt.Sprintf("set message.metadata.skillId to one of: %s", strings.Join(listed, ", "))
	reason := fault.ReasonInvalidParams
	if id != "" {
		msg = fmt.Sprintf("unknown skill %q; %s", truncate(id, 64), msg)
		reason = fault.ReasonUnknownSkill
	}
	if len(ids) == 0 {
		msg = "no skills are loaded"
	}
	return nil, nil, fault.New(fault.InvalidParams, reason, msg).With("skills", listed)
}

func pluginNamed(ps []*plugin.Plugin, name string) (*plugin.Plugin, bool) {
	for _, p := range ps {
		if p != nil && p.Manifest != nil && p.Manifest.Name == name {
			return p, true
		}
	}
	return nil, false
}

func findSkill(scope []*plugin.Plugin, id string) (*plugin.Plugin, *plugin.Skill, bool) {
	for _, p := range scope {
		for _, s := range p.Manifest.Skills {
			if s.ID == id {
				return p, s, true
			}
		}
	}
	return nil, nil, false
}

func skillIDOf(meta map[string]any) (string, error) {
	v, ok := meta[MetaSkillID]
	if !ok {
		return "", nil
	}
	s, ok := v.(string)
	if !ok || s == "" || len(s) > maxSkillIDLen {
		return "", fault.New(fault.InvalidParams, fault.ReasonInvalidParams, "metadata.skillId must be a non-empty string of at most 256 bytes")
	}
	return s, nil
}

// inputOf turns a message's parts into the skill's JSON input: the (single)
// data part as is; otherwise the text parts, joined by newlines, as
// {"text": …}. File parts (raw, url) are not accepted (-32005).
func inputOf(m *a2av1.Message) (json.RawMessage, error) {
	if len(m.Parts) == 0 {
		return nil, fault.New(fault.InvalidParams, fault.ReasonInvalidParams, "message has no parts")
	}
	if len(m.Parts) > MaxParts {
		return nil, fault.Newf(fault.InvalidParams, fault.ReasonInvalidParams, "message has %d parts, at most %d allowed", len(m.Parts), MaxParts)
	}
	var data []a2av1.Data
	var texts []string
	for _, p := range m.Parts {
		switch c := p.Content.(type) {
		case a2av1.Data:
			data = append(data, c)
		case a2av1.Text:
			texts = append(texts, string(c))
		default:
			return nil, fault.New(fault.ContentTypeNotSupported, fault.ReasonContentType, "only text and data parts are accepted (application/json, text/plain)")
		}
	}
	switch {
	case len(data) > 1:
		return nil, fault.New(fault.InvalidParams, fault.ReasonInvalidParams, "a message carries at most one data part (the skill's JSON input)")
	case len(data) == 1:
		b, err := json.Marshal(data[0].Value)
		if err != nil {
			return nil, fault.Wrap(fault.InvalidParams, fault.ReasonInvalidParams, err, "data part is not JSON")
		}
		return b, nil
	}
	b, err := json.Marshal(map[string]string{"text": strings.Join(texts, "\n")})
	if err != nil {
		return nil, fmt.Errorf("encode text input: %w", err)
	}
	return b, nil
}

// outputPart is the artifact part of a skill's output: a data part when the
// output is JSON, else a text part.
func outputPart(out []byte) *a2av1.Part {
	var v any
	if len(out) > 0 && json.Unmarshal(out, &v) == nil {
		return a2av1.NewDataPart(v)
	}
	return a2av1.NewTextPart(string(out))
}

// checkOutputModes refuses a request whose accepted output modes exclude both
// of ours.
func checkOutputModes(cfg *a2av1.SendMessageConfig) error {
	if cfg == nil || len(cfg.AcceptedOutputModes) == 0 {
		return nil
	}
	for _, m := range cfg.AcceptedOutputModes {
		if slices.Contains(agentcard.OutputModes, m) || m == "*/*" {
			return nil
		}
	}
	return fault.New(fault.ContentTypeNotSupported, fault.ReasonContentType, "skill output is application/json or text/plain")
}

// errorMessage is the agent message a failed task's status carries: the
// error as text, its fault.Summary as metadata.
func errorMessage(t *a2av1.Task, err error) *a2av1.Message {
	fe := fault.From(err)
	m := a2av1.NewMessageForTask(a2av1.MessageRoleAgent, t, a2av1.NewTextPart(fe.Error()))
	m.Metadata = fe.Summary().Map()
	return m
}

// checkSizes refuses metadata and history over their caps before anything
// is stored (-32602 value_too_large, naming the field).
func (s *Service) checkSizes(req *a2av1.SendMessageRequest) error {
	check := func(field string, v any, limit int) error {
		b, err := json.Marshal(v)
		if err != nil {
			return fault.Wrap(fault.InvalidParams, fault.ReasonInvalidParams, err, field+" is not JSON")
		}
		if len(b) > limit {
			return fault.Newf(fault.InvalidParams, fault.ReasonValueTooLarge, "%s is %d bytes, over the %d-byte limit", field, len(b), limit).
				With("field", field).With("limit_bytes", limit)
		}
		return nil
	}
	if len(req.Message.Metadata) > 0 {
		if err := check("params.message.metadata", req.Message.Metadata, int(s.cfg.MaxMetadata)); err != nil {
			return err
		}
	}
	if len(req.Metadata) > 0 {
		if err := check("params.metadata", req.Metadata, int(s.cfg.MaxMetadata)); err != nil {
			return err
		}
	}
	return check("params.message", req.Message, int(s.cfg.MaxHistory))
}

// truncate is s cut to n bytes, marked with "…" when cut (for client
// input quoted in errors and logs).
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
