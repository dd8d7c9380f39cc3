package devkit_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/hostfn"
	"github.com/skillhost/skillhost/sdk"
)

// TestSDKErrorCodesMatchTheHost: the SDK's constants for the host
// functions' error codes are the codes the host sends.
func TestSDKErrorCodesMatchTheHost(t *testing.T) {
	t.Parallel()
	host := []string{hostfn.CodeBadPointer, hostfn.CodeRequestTooLarge, hostfn.CodeBadRequest, hostfn.CodeRateLimited,
		hostfn.CodeNoSession, hostfn.CodeSessionNotFound, hostfn.CodeValueTooLarge, hostfn.CodeUnavailable,
		hostfn.CodeStoreError, hostfn.CodeHostNotAllowed, hostfn.CodeAddressRefused, hostfn.CodeResponseTooLarge,
		hostfn.CodeTimeout, hostfn.CodeFetchFailed, hostfn.CodeAgentNotAllowed, hostfn.CodeInternal, hostfn.CodeNotATask}
	guest := []string{sdk.CodeBadPointer, sdk.CodeRequestTooLarge, sdk.CodeBadRequest, sdk.CodeRateLimited,
		sdk.CodeNoSession, sdk.CodeSessionNotFound, sdk.CodeValueTooLarge, sdk.CodeUnavailable,
		sdk.CodeStoreError, sdk.CodeHostNotAllowed, sdk.CodeAddressRefused, sdk.CodeResponseTooLarge,
		sdk.CodeTimeout, sdk.CodeFetchFailed, sdk.CodeAgentNotAllowed, sdk.CodeInternal, sdk.CodeNotATask}
	if diff := cmp.Diff(host, guest); diff != "" {
		t.Errorf("sdk codes differ from hostfn's (-host +sdk):\n%s", diff)
	}
	// A failed agent_call's code is the failure's reason.
	reasons := []string{fault.ReasonTimeout, fault.ReasonCallDepth, fault.ReasonCircuitOpen, fault.ReasonPeerUnavailable,
		fault.ReasonUnknownAgent, fault.ReasonScopeDenied}
	codes := []string{sdk.CodeTimeout, sdk.CodeCallDepth, sdk.CodeCircuitOpen, sdk.CodePeerUnavailable,
		sdk.CodeUnknownAgent, sdk.CodeScopeDenied}
	if diff := cmp.Diff(reasons, codes); diff != "" {
		t.Errorf("sdk agent-call codes differ from host/fault's reasons (-fault +sdk):\n%s", diff)
	}
}
