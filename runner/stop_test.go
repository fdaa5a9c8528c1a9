package runner

import (
	"errors"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/rundir"
)

// A run stopped at its first anomaly counts only when the full check finds
// it invalid; valid or unknown, it is discarded. A run that ran to its
// limit is never discarded, whatever its verdict.
func TestDiscardStoppedRunsNotInvalid(t *testing.T) {
	stop := &rundir.Stop{At: 4_100_000_000, Write: 4_000_000_000, Process: "c2"}
	for _, c := range []struct {
		verdict checkers.Verdict
		stopped *rundir.Stop
		discard bool
	}{
		{checkers.Valid, stop, true},
		{checkers.Unknown, stop, true},
		{checkers.Invalid, stop, false},
		{checkers.Valid, nil, false},
		{checkers.Unknown, nil, false},
	} {
		err := Discard(&rundir.Results{Verdict: c.verdict, Stopped: c.stopped})
		switch {
		case c.discard && !errors.Is(err, ErrDiscarded):
			t.Errorf("%s, stopped %v: %v, want it discarded", c.verdict, c.stopped != nil, err)
		case c.discard && (!strings.Contains(err.Error(), "c2's write at 4.000 s") || strings.Contains(err.Error(), "\n")):
			t.Errorf("discarded without saying why in one line: %q", err)
		case !c.discard && err != nil:
			t.Errorf("%s, stopped %v: %v, want it kept", c.verdict, c.stopped != nil, err)
		}
	}
	if Discard(nil) != nil {
		t.Error("no judgment discarded")
	}
}
