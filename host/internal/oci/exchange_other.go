//go:build !linux

package oci

import "errors"

// exchange is not available here: swap renames in two steps.
func exchange(a, b string) error { return errors.ErrUnsupported }
