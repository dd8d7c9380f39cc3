package plan

import (
	"fmt"
	"strings"

	"github.com/skillhost/skillhost/host/fault"
)

// graph is the dependency graph of a validated definition, by step index.
type graph struct {
	deps [][]int // deps[i]: the steps step i waits for
}

// graph builds the graph of a validated definition (dependencies explicit).
// Unknown ids, which validation refuses, are ignored.
func (d *Definition) graph() graph {
	index := make(map[string]int, len(d.Steps))
	for i, s := range d.Steps {
		index[s.ID] = i
	}
	g := graph{deps: make([][]int, len(d.Steps))}
	for i, s := range d.Steps {
		for _, id := range d.dependsOn(i, s) {
			if j, ok := index[id]; ok {
				g.deps[i] = append(g.deps[i], j)
			}
		}
	}
	return g
}

// dependsOn is step i's dependency list; a nil list (a definition stored
// before dependencies were explicit) means the step before it.
func (d *Definition) dependsOn(i int, s Step) []string {
	if s.DependsOn == nil && i > 0 {
		return []string{d.Steps[i-1].ID}
	}
	return s.DependsOn
}

// checkGraph makes every step's dependencies explicit and refuses unknown
// ids, self-references, repeats and cycles (InvalidParams,
// invalid_dependency, naming the field). index maps step ids to indexes.
func (d *Definition) checkGraph(index map[string]int) (graph, error) {
	for i := range d.Steps {
		s := &d.Steps[i]
		if s.DependsOn == nil {
			s.DependsOn = []string{}
			if i > 0 {
				s.DependsOn = []string{d.Steps[i-1].ID}
			}
			continue
		}
		seen := make(map[string]bool, len(s.DependsOn))
		for k, id := range s.DependsOn {
			field := fmt.Sprintf("plan_definition.steps[%d].depends_on[%d]", i, k)
			_, known := index[id]
			switch {
			case id == s.ID:
				return graph{}, badDependency(field, fmt.Sprintf("%q is the step itself; a step cannot depend on itself", clip(id, 64)))
			case !known:
				return graph{}, badDependency(field, fmt.Sprintf("%q names no step of this plan", clip(id, 64)))
			case seen[id]:
				return graph{}, badDependency(field, fmt.Sprintf("%q is listed twice", id))
			}
			seen[id] = true
		}
	}
	g := d.graph()
	if cycle := g.cycle(); cycle != nil {
		names := make([]string, len(cycle))
		for k, i := range cycle {
			names[k] = d.Steps[i].ID
		}
		field := fmt.Sprintf("plan_definition.steps[%d].depends_on", cycle[0])
		return graph{}, badDependency(field, "forms a cycle: "+strings.Join(names, " → "))
	}
	return g, nil
}

func badDependency(field, msg string) *fault.Error {
	return fault.New(fault.InvalidParams, fault.ReasonInvalidDependency, field+" "+msg).With("field", field)
}

// cycle returns one dependency cycle as step indexes (first repeated at the
// end), or nil when the graph is acyclic. Kahn's algorithm removes every
// step that can run; a step left over lies on or behind a cycle, and
// following its remaining dependencies must revisit a step.
func (g graph) cycle() []int {
	n := len(g.deps)
	waiting := make([]int, n) // unfinished dependencies per step
	users := make([][]int, n) // steps that depend on each step
	var ready []int
	for i, ds := range g.deps {
		waiting[i] = len(ds)
		for _, j := range ds {
			users[j] = append(users[j], i)
		}
		if len(ds) == 0 {
			ready = append(ready, i)
		}
	}
	done := 0
	for len(ready) > 0 {
		i := ready[len(ready)-1]
		ready = ready[:len(ready)-1]
		done++
		for _, u := range users[i] {
			if waiting[u]--; waiting[u] == 0 {
				ready = append(ready, u)
			}
		}
	}
	if done == n {
		return nil
	}
	start := -1
	for i := range waiting {
		if waiting[i] > 0 {
			start = i
			break
		}
	}
	pos := map[int]int{}
	var path []int
	for i := start; ; {
		if k, seen := pos[i]; seen {
			return append(path[k:], i)
		}
		pos[i] = len(path)
		path = append(path, i)
		for _, j := range g.deps[i] {
			if waiting[j] > 0 {
				i = j
				break
			}
		}
	}
}

// ancestors returns, per step, the set of steps it depends on directly or
// indirectly. The graph must be acyclic.
func (g graph) ancestors() []bitset {
	n := len(g.deps)
	out := make([]bitset, n)
	state := make([]uint8, n) // 0 new, 1 visiting, 2 done
	var visit func(i int)
	visit = func(i int) {
		if state[i] != 0 {
			return
		}
		state[i] = 1
		out[i] = newBitset(n)
		for _, j := range g.deps[i] {
			visit(j)
			out[i].set(j)
			out[i].union(out[j])
		}
		state[i] = 2
	}
	for i := range n {
		visit(i)
	}
	return out
}

// bitset is a fixed-size set of step indexes.
type bitset []uint64

func newBitset(n int) bitset    { return make(bitset, (n+63)/64) }
func (b bitset) set(i int)      { b[i/64] |= 1 << (uint(i) % 64) }
func (b bitset) has(i int) bool { return b[i/64]&(1<<(uint(i)%64)) != 0 }
func (b bitset) union(o bitset) {
	for k := range b {
		b[k] |= o[k]
	}
}
