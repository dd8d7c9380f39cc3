package host_test

import (
	"context"
	"errors"
	"iter"
	"net/http"
	"strings"
	"testing"
	"time"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	a2agrpc "github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"github.com/a2aproject/a2a-go/v2/a2apb/v1/pbconv"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/skillhost/skillhost/host/config"
)

// withGRPC turns the gRPC binding on, on a free loopback port.
func withGRPC(c *config.Config) { c.GRPC.Listen = "127.0.0.1:0" }

// grpcInterface resolves the card at url (through hc, with the README's
// card parser for a2a-go v2.3.1) and returns it with its gRPC interface
// (failing when it has none).
func grpcInterface(ctx context.Context, t *testing.T, hc *http.Client, url string) (*a2av1.AgentCard, *a2av1.AgentInterface) {
	t.Helper()
	card, err := (&agentcard.Resolver{Client: hc, CardParser: readmeCardParser}).Resolve(ctx, url)
	if err != nil {
		t.Fatalf("resolve the card: %v", err)
	}
	for _, i := range card.SupportedInterfaces {
		if i.ProtocolBinding == a2av1.TransportProtocolGRPC {
			return card, i
		}
	}
	t.Fatalf("the card advertises no GRPC interface: %+v", card.SupportedInterfaces)
	return nil, nil
}

// keyCreds sends fixed metadata (an API key) with every call.
type keyCreds map[string]string

func (k keyCreds) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return k, nil
}
func (keyCreds) RequireTransportSecurity() bool { return false }

// mustGRPCClient is an official a2a-go v2 client of card speaking gRPC
// only (its defaults, JSON-RPC and HTTP+JSON, disabled), dialed with opts
// (plain h2c unless they say otherwise).
func mustGRPCClient(ctx context.Context, t *testing.T, card *a2av1.AgentCard, opts ...grpc.DialOption) *a2aclient.Client {
	t.Helper()
	if len(opts) == 0 {
		opts = []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	}
	cl, err := a2aclient.NewFromCard(ctx, card, a2aclient.WithDefaultsDisabled(), a2agrpc.WithGRPCTransport(opts...))
	if err != nil {
		t.Fatalf("gRPC client: %v", err)
	}
	t.Cleanup(func() { _ = cl.Destroy() })
	return cl
}

// mustRawGRPC is the generated A2A service client on addr (plain h2c),
// for what a2a-go's client does not show: status codes and ErrorInfo.
func mustRawGRPC(t *testing.T, addr string, opts ...grpc.DialOption) a2apb.A2AServiceClient {
	t.Helper()
	conn, err := grpc.NewClient(addr, append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return a2apb.NewA2AServiceClient(conn)
}

// errorInfo is the code of a gRPC error and its ErrorInfo (nil if none).
func errorInfo(err error) (codes.Code, *errdetails.ErrorInfo) {
	st := status.Convert(err)
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return st.Code(), info
		}
	}
	return st.Code(), nil
}

// skillhostReason is skillhost's reason an ErrorInfo carries: its
// metadata's "reason", else (skillhost's own kinds) its reason lower-cased.
func skillhostReason(info *errdetails.ErrorInfo) string {
	if info == nil {
		return ""
	}
	if r := info.Metadata["reason"]; r != "" {
		return r
	}
	return strings.ToLower(info.Reason)
}

// pbMessage is message(skill, data) as a protobuf request.
func pbMessage(t *testing.T, skill string, data map[string]any) *a2apb.SendMessageRequest {
	t.Helper()
	req, err := pbconv.ToProtoSendMessageRequest(message(skill, data))
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// TestGRPCBinding: the official a2a-go v2 client, speaking only gRPC to
// the interface the card advertises, drives every task operation against
// a real host on 127.0.0.1: send, stream, get, list, subscribe, cancel,
// push configs. The tasks are the same ones the other bindings see.
func TestGRPCBinding(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustPlugin(t, dir, "tools", bindingsManifest)
	th, logs := mustHostWith(t, dir, func(c *config.Config) {
		withGRPC(c)
		c.Net.AllowPrivate = []string{"127.0.0.0/8"} // the push receiver
	})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	card, iface := grpcInterface(ctx, t, httpClient, th.URL)
	if iface.ProtocolVersion != "1.0" || iface.URL == "" || iface.URL[0] == 'h' { // host:port, no scheme
		t.Errorf("gRPC interface %+v, want host:port with protocol 1.0", iface)
	}
	cl := mustGRPCClient(ctx, t, card)

	// send
	res, err := cl.SendMessage(ctx, message("echo", map[string]any{"text": "hi grpc"}))
	if err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	task, ok := res.(*a2av1.Task)
	if !ok || task.Status.State != a2av1.TaskStateCompleted || len(task.Artifacts) != 1 {
		t.Fatalf("SendMessage = %+v", res)
	}
	if diff := cmp.Diff(a2av1.NewDataPart(map[string]any{"text": "hi grpc"}).Content, task.Artifacts[0].Parts[0].Content); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
	// It went through the engine's middleware: an access line names the
	// transport, the method and the skill the task ran (read from the task).
	if len(logs.lines(`"msg":"access"`, `"transport":"grpc"`, `"method":"SendMessage"`, `"plugin":"tools"`, `"skill":"echo"`)) == 0 {
		t.Errorf("no access line of SendMessage over grpc naming tools/echo:\n%s", strings.Join(logs.lines(`"msg":"access"`, `"transport":"grpc"`), "\n"))
	}

	// get, here and over JSON-RPC (the same loopback principal owns it)
	got, err := cl.GetTask(ctx, &a2av1.GetTaskRequest{ID: task.ID})
	if err != nil || got.ID != task.ID || got.Status.State != a2av1.TaskStateCompleted {
		t.Errorf("GetTask = %+v, %v", got, err)
	}
	if r := th.call(t, "GetTask", map[string]any{"id": task.ID}); r.Error != nil {
		t.Errorf("GetTask over JSON-RPC of the task sent over gRPC: %+v", r.Error)
	}
	if _, err := cl.GetTask(ctx, &a2av1.GetTaskRequest{ID: "no-such-task"}); !errors.Is(err, a2av1.ErrTaskNotFound) {
		t.Errorf("GetTask of an unknown task: %v, want ErrTaskNotFound", err)
	}

	// stream
	checkStream(ctx, t, cl)

	// list
	list, err := cl.ListTasks(ctx, &a2av1.ListTasksRequest{ContextID: task.ContextID})
	if err != nil || len(list.Tasks) != 1 || list.Tasks[0].ID != task.ID {
		t.Errorf("ListTasks(context) = %+v, %v", list, err)
	}

	// a running task: push config, subscribe, cancel
	url, pushes := mustReceiver(t)
	spinReq := message("spin", map[string]any{})
	spinReq.Config = &a2av1.SendMessageConfig{ReturnImmediately: true}
	res, err = cl.SendMessage(ctx, spinReq)
	if err != nil {
		t.Fatalf("SendMessage(spin): %v", err)
	}
	spin := res.(*a2av1.Task)
	want := &a2av1.PushConfig{TaskID: spin.ID, ID: "g1", URL: url, Token: "tok-grpc"}
	if _, err := cl.CreateTaskPushConfig(ctx, want); err != nil {
		t.Fatalf("CreateTaskPushConfig: %v", err)
	}
	if cfg, err := cl.GetTaskPushConfig(ctx, &a2av1.GetTaskPushConfigRequest{TaskID: spin.ID, ID: "g1"}); err != nil || !cmp.Equal(want, cfg) {
		t.Errorf("GetTaskPushConfig = %+v, %v; want %+v", cfg, err, want)
	}
	if cfgs, err := cl.ListTaskPushConfigs(ctx, &a2av1.ListTaskPushConfigRequest{TaskID: spin.ID}); err != nil || len(cfgs) != 1 {
		t.Errorf("ListTaskPushConfigs = %v, %v", cfgs, err)
	}
	next, stop := iter.Pull2(cl.SubscribeToTask(ctx, &a2av1.SubscribeToTaskRequest{ID: spin.ID}))
	defer stop()
	if ev, err, ok := next(); !ok || err != nil {
		t.Fatalf("SubscribeToTask: %v", err)
	} else if tk, isTask := ev.(*a2av1.Task); !isTask || tk.ID != spin.ID {
		t.Errorf("first event of the subscription %T %+v, want the task", ev, ev)
	}
	canceled, err := cl.CancelTask(ctx, &a2av1.CancelTaskRequest{ID: spin.ID})
	if err != nil || canceled.Status.State != a2av1.TaskStateCanceled {
		t.Fatalf("CancelTask = %+v, %v", canceled, err)
	}
	for {
		ev, err, ok := next()
		if !ok || err != nil {
			t.Fatalf("the subscription ended before the canceled status: %v", err)
		}
		if su, isStatus := ev.(*a2av1.TaskStatusUpdateEvent); isStatus && su.Status.State == a2av1.TaskStateCanceled {
			break
		}
	}
	if p := waitState(t, pushes, spin.ID, a2av1.TaskStateCanceled); p.token != "tok-grpc" {
		t.Errorf("push token %q", p.token)
	}
	if _, err := cl.CancelTask(ctx, &a2av1.CancelTaskRequest{ID: spin.ID}); !errors.Is(err, a2av1.ErrTaskNotCancelable) {
		t.Errorf("second CancelTask: %v, want ErrTaskNotCancelable", err)
	}
	if err := cl.DeleteTaskPushConfig(ctx, &a2av1.DeleteTaskPushConfigRequest{TaskID: spin.ID, ID: "g1"}); err != nil {
		t.Errorf("DeleteTaskPushConfig: %v", err)
	}
	if cfgs, err := cl.ListTaskPushConfigs(ctx, &a2av1.ListTaskPushConfigRequest{TaskID: spin.ID}); err != nil || len(cfgs) != 0 {
		t.Errorf("after delete: %v, %v", cfgs, err)
	}
	if ext, err := cl.GetExtendedAgentCard(ctx, &a2av1.GetExtendedAgentCardRequest{}); !errors.Is(err, a2av1.ErrExtendedCardNotConfigured) {
		t.Errorf("GetExtendedAgentCard without keys = %+v, %v; want ErrExtendedCardNotConfigured", ext, err)
	}
}

// TestGRPCErrors: errors carry the gRPC code of host/fault's table and an
// ErrorInfo like the HTTP+JSON binding's: the A2A reason in the A2A
// domain, skillhost's reason and the request id in the metadata.
func TestGRPCErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustPlugin(t, dir, "tools", bindingsManifest)
	th, _ := mustHostWith(t, dir, withGRPC)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, iface := grpcInterface(ctx, t, httpClient, th.URL)
	raw := mustRawGRPC(t, iface.URL)
	tests := []struct {
		name   string
		call   func() error
		code   codes.Code
		a2a    string // ErrorInfo reason
		reason string // skillhost's, in the metadata
	}{
		{"unknown task", func() error {
			_, err := raw.GetTask(ctx, &a2apb.GetTaskRequest{Id: "no-such-task"})
			return err
		}, codes.NotFound, "TASK_NOT_FOUND", "task_not_found"},
		{"unknown skill", func() error {
			_, err := raw.SendMessage(ctx, pbMessage(t, "nope", map[string]any{}))
			return err
		}, codes.InvalidArgument, "INVALID_PARAMS", "unknown_skill"},
		{"subscribe to an unknown task", func() error {
			s, err := raw.SubscribeToTask(ctx, &a2apb.SubscribeToTaskRequest{Id: "no-such-task"})
			if err == nil {
				_, err = s.Recv()
			}
			return err
		}, codes.NotFound, "TASK_NOT_FOUND", "task_not_found"},
		{"unknown tenant", func() error {
			req := pbMessage(t, "echo", map[string]any{})
			req.Tenant = "nobody"
			_, err := raw.SendMessage(ctx, req)
			return err
		}, codes.InvalidArgument, "INVALID_PARAMS", "unknown_tenant"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, info := errorInfo(tt.call())
			if code != tt.code || info == nil {
				t.Fatalf("code %v, ErrorInfo %v; want %v with an ErrorInfo", code, info, tt.code)
			}
			if info.Reason != tt.a2a || info.Domain != "a2a-protocol.org" || info.Metadata["reason"] != tt.reason || info.Metadata["request_id"] == "" {
				t.Errorf("ErrorInfo = %+v; want %s in a2a-protocol.org with reason %s and a request id", info, tt.a2a, tt.reason)
			}
		})
	}
}
