package checkers

import (
	"testing"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/store"
)

// A run without a store log leaves the checkers of the store's decisions
// nothing to judge: each is unknown, with the reason the input gives,
// where the same history with its log is invalid (an empty log would make
// fence valid). The history's own checkers judge it as before.
func TestNoStoreLogIsUnknown(t *testing.T) {
	counter := load(t, "stale-fence-none")
	var set Input
	setSection(&set.History, &set.Store, "c1", 1, 0, nil, 10, history.OK, store.Accepted)
	setSection(&set.History, &set.Store, "c2", 2, 10, nil, 20, history.OK, store.Accepted)
	set.Key = "x"
	const why = "no store.log: the harness was killed"
	for _, c := range []struct {
		checker Checker
		in      Input
	}{{Fence{}, counter}, {LostUpdates{}, counter}, {LostElements{}, set}} {
		if r := c.checker.Check(c.in); r.Valid != Invalid {
			t.Fatalf("%s with its store log: %s, want invalid", r.Checker, r.Valid)
		}
		without := c.in
		without.Store, without.NoStore = nil, why
		if r := c.checker.Check(without); r.Valid != Unknown || r.Reason != why {
			t.Errorf("%s without a store log: %s (%q), want unknown (%q)", r.Checker, r.Valid, r.Reason, why)
		}
	}
	without := counter
	without.Store, without.NoStore = nil, why
	for _, c := range []Checker{Linearizable{}, Exclusion{}} {
		if got, want := c.Check(without).Valid, c.Check(counter).Valid; got != want {
			t.Errorf("%s without a store log: %s, with it %s", c.Name(), got, want)
		}
	}
}
