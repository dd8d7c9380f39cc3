// Package auth owns who a request acts for and what it may do: the API key
// set (auth.keys), the principal attached to every request's context, the
// scopes that grant methods, skills and agents, session tokens, and the
// per-principal limits (rate, concurrent calls, sessions, context bytes).
//
// It knows nothing of HTTP or JSON-RPC: the HTTP adapter extracts a
// credential and calls Authenticator.Authenticate; transports attach the
// resulting Principal with With; method handlers read it with From and ask
// it (AllowMethod, AllowSkill, AllowAgent, Owns). Every refusal is a
// *fault.Error of kind Unauthorized (HTTP 401), Forbidden (403) or
// ResourceExhausted with reason rate_limited or key_quota.
//
//	keys, err := auth.NewKeySet(specs, limits) // config.Auth.KeySet builds both from auth.*
//	authn := auth.NewAuthenticator(keys, tokenStore)
//	p, err := authn.Authenticate(ctx, credential) // 401 on failure
//	ctx = auth.With(ctx, p)
//	...
//	if err := auth.From(ctx).AllowSkill("text-tools", "uppercase"); err != nil { … } // 403
package auth
