package fault

import "sort"

// ReasonsOf lists the reasons declared for k, sorted (for the wire-shape
// table test).
func ReasonsOf(k Kind) []string {
	var out []string
	for r := range reasonKinds {
		if Declared(r, k) {
			out = append(out, r)
		}
	}
	sort.Strings(out)
	return out
}
