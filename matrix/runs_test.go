package matrix

import "testing"

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
		if got := exp.ForRun(c.backend, "register", c.nemesis, c.fence, "lockbench", c.variant); got != c.want {
			t.Errorf("%+v: %s, want %s", c, got, c.want)
		}
	}
}
