//go:build !wasip1

package sdk

import "embed"

// Source is this module's own source: go.mod, go.sum and the Go files of
// sdk, sdk/sdktest and sdk/internal (tests included). The skillhost binary
// embeds it so that `skillhost plugin new` can write the SDK into a new
// plugin folder on a machine with no skillhost checkout. Plugins have no use
// for it (and on GOOS=wasip1 it does not exist).
//
//go:embed go.mod go.sum *.go sdktest internal
var Source embed.FS
