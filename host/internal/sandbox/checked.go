package sandbox

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sync"
)

// The record of load checks passed: an empty file per module under
// <CacheDir>/skillhost-checked, named by a digest of the module's bytes,
// its table maximums, the wazero and Extism versions and the platform.
// A module on record is not compiled at Register (the host starts without
// compiling what it compiled before); its first call loads its code from
// wazero's cache. Whoever can write the cache folder could plant machine
// code in wazero's cache anyway: the record adds no trust.
const checkedDir = "skillhost-checked"

// checkKey names a module's record.
func checkKey(digest [32]byte, tableMaxes []uint32) string {
	h := sha256.New()
	h.Write([]byte("skillhost-checked/1\x00" + engineVersions() + "\x00" + runtime.GOOS + "/" + runtime.GOARCH + "\x00"))
	h.Write(digest[:])
	for _, m := range tableMaxes {
		h.Write(binary.LittleEndian.AppendUint32(nil, m))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// engineVersions are the versions of the modules that compile plugins, as
// built into the binary ("" when the build has no module information).
var engineVersions = sync.OnceValue(func() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	out := ""
	for _, d := range bi.Deps {
		switch d.Path {
		case "github.com/tetratelabs/wazero", "github.com/extism/go-sdk":
			out += d.Path + "@" + d.Version + ";"
		}
	}
	return out
})

// isChecked reports whether key is on record.
func (rt *Runtime) isChecked(key string) bool {
	if rt.cacheDir == "" {
		return false
	}
	_, err := os.Stat(filepath.Join(rt.cacheDir, checkedDir, key))
	return err == nil
}

// markChecked records key (best effort: without the record the module is
// only checked again at the next start).
func (rt *Runtime) markChecked(key string) {
	if rt.cacheDir == "" {
		return
	}
	dir := filepath.Join(rt.cacheDir, checkedDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		rt.logger.Debug("sandbox: recording a load check", "error", err)
		return
	}
	if err := os.WriteFile(filepath.Join(dir, key), nil, 0o600); err != nil {
		rt.logger.Debug("sandbox: recording a load check", "error", err)
	}
}
