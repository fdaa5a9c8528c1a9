package matrix

import (
	"strings"
	"testing"

	"github.com/lockbench/lockbench/config"
	"github.com/lockbench/lockbench/store"
)

// TestForRun: a run's expectation is its cell's under the built-in rules
// (redis under a pause: invalid without a fence, valid with every request
// fenced; a combination as its faults together), and a known-broken
// variant's is its mutants entry's.
func TestForRun(t *testing.T) {
	exp, err := LoadExpectations("")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		backend, nemesis, fence, variant, want string
	}{
		{"redis", "pause", "none", "correct", ExpectInvalid},
		{"redis", "pause", "none", "", ExpectInvalid},
		{"redis", "pause", "all", "correct", ExpectValid},
		{"redis", "none", "none", "correct", ExpectValid},
		{"redis", "none+pause", "none", "correct", ExpectInvalid},
		{"redis", "kill-client", "none", "setnx-expire", ExpectInvalid},
	} {
		cfg := config.Config{Backend: c.backend, Workload: "register", Nemesis: strings.Split(c.nemesis, config.Combine),
			Fence: store.Fence(c.fence), Store: "lockbench", Variant: c.variant}
		if got := exp.ForRun(cfg); got != c.want {
			t.Errorf("%+v: %s, want %s", c, got, c.want)
		}
	}
}
