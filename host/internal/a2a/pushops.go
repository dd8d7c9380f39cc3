package a2a

import (
	"context"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/a2a/push"
	"github.com/skillhost/skillhost/host/internal/auth"
)

// pushOn is the service's push notifications, or PushNotSupported (-32003).
func (s *Service) pushOn() (*push.Service, error) {
	if s.cfg.Push == nil {
		return nil, fault.New(fault.PushNotSupported, fault.ReasonPushNotSupported, "push notifications are not enabled on this host; use streaming or GetTask")
	}
	return s.cfg.Push, nil
}

// CreatePushConfig stores a push config for one of the caller's tasks
// (replacing a config of the same id).
func (s *Service) CreatePushConfig(ctx context.Context, c *a2av1.PushConfig) (*a2av1.PushConfig, error) {
	p, err := s.pushOn()
	if err != nil {
		return nil, err
	}
	if _, _, err := s.owned(ctx, c.TaskID, c.Tenant); err != nil {
		return nil, err
	}
	return p.Set(ctx, auth.From(ctx).Owner(), c)
}

// GetPushConfig returns one push config of one of the caller's tasks.
func (s *Service) GetPushConfig(ctx context.Context, req *a2av1.GetTaskPushConfigRequest) (*a2av1.PushConfig, error) {
	configs, err := s.pushConfigs(ctx, req.TaskID, req.Tenant)
	if err != nil {
		return nil, err
	}
	for _, c := range configs {
		if c.ID == req.ID {
			return c, nil
		}
	}
	return nil, fault.Newf(fault.TaskNotFound, fault.ReasonPushConfigNotFound, "task %s has no push config %q", req.TaskID, truncate(req.ID, 64))
}

// ListPushConfigs returns the push configs of one of the caller's tasks.
func (s *Service) ListPushConfigs(ctx context.Context, req *a2av1.ListTaskPushConfigRequest) (*a2av1.ListTaskPushConfigResponse, error) {
	configs, err := s.pushConfigs(ctx, req.TaskID, req.Tenant)
	if err != nil {
		return nil, err
	}
	return &a2av1.ListTaskPushConfigResponse{Configs: configs}, nil
}

// DeletePushConfig deletes a push config (deleting a missing one succeeds).
func (s *Service) DeletePushConfig(ctx context.Context, req *a2av1.DeleteTaskPushConfigRequest) error {
	p, err := s.pushOn()
	if err != nil {
		return err
	}
	if _, _, err := s.owned(ctx, req.TaskID, req.Tenant); err != nil {
		return err
	}
	return p.Delete(ctx, auth.From(ctx).Owner(), req.TaskID, req.ID)
}

func (s *Service) pushConfigs(ctx context.Context, task a2av1.TaskID, tenant string) ([]*a2av1.PushConfig, error) {
	p, err := s.pushOn()
	if err != nil {
		return nil, err
	}
	if _, _, err := s.owned(ctx, task, tenant); err != nil {
		return nil, err
	}
	return p.List(ctx, auth.From(ctx).Owner(), task)
}

// notifyPush queues a task's updates (nil ones skipped) for its push
// configs; nothing happens for a task without configs.
func (s *Service) notifyPush(ctx context.Context, owner string, id a2av1.TaskID, events ...a2av1.Event) {
	if s.cfg.Push != nil {
		s.cfg.Push.Notify(ctx, owner, id, events...)
	}
}
