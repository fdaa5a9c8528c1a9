package backends

import (
	"slices"

	"github.com/lockbench/lockbench/config"
	"github.com/lockbench/lockbench/workloads"
)

// Mutant is a backend whose lock client has known-broken variants beside
// the correct one, each a real code path, and named failpoints in its code
// that the nemesis can arm.
type Mutant interface {
	// Variants are the broken clients; the correct one is not among them.
	Variants() []Variant
	// Failpoints are the points its lock client passes (locks.Fail…),
	// besides the workload's own.
	Failpoints() []string
}

// Variant is one known-broken lock client.
type Variant struct {
	Name string
	// Wrong says what it does wrong, for --help.
	Wrong string
}

// VariantsOf are the variants --variant takes for b: the correct client
// first.
func VariantsOf(b Backend) []Variant {
	out := []Variant{{config.Correct, "the client as its library's users are told to write it"}}
	if m, ok := b.(Mutant); ok {
		out = append(out, m.Variants()...)
	}
	return out
}

// HasVariant reports whether b offers the variant named v.
func HasVariant(b Backend, v string) bool {
	return slices.ContainsFunc(VariantsOf(b), func(x Variant) bool { return x.Name == v })
}

// FailpointsOf are the points b's clients pass that --failpoint can name:
// the workload's, for every client that locks, and its lock client's.
func FailpointsOf(b Backend) []string {
	if !b.Locks() {
		return nil
	}
	out := []string{workloads.FailSection}
	if m, ok := b.(Mutant); ok {
		out = append(out, m.Failpoints()...)
	}
	return out
}

// VariantNames are every variant any backend offers, the correct client
// first, without repeats: what --variant completes.
func VariantNames() []string {
	var out []string
	for _, b := range All {
		for _, v := range VariantsOf(b) {
			if !slices.Contains(out, v.Name) {
				out = append(out, v.Name)
			}
		}
	}
	return out
}

// FailpointNames are every point any backend's clients pass, without
// repeats: what --failpoint completes.
func FailpointNames() []string {
	var out []string
	for _, b := range All {
		for _, p := range FailpointsOf(b) {
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}
