package runner

import (
	"errors"
	"slices"
	"testing"

	"github.com/lockbench/lockbench/clusters"
)

// Which runs clean removes: never a live one unless asked, and `--run` of
// a live run is refused without --include-live.
func TestChooseRuns(t *testing.T) {
	runs := []clusters.RunState{{ID: "dead1"}, {ID: "live1", Live: true}, {ID: "dead2"}, {ID: "live2", Live: true}}
	ids := func(rs []clusters.RunState) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.ID)
		}
		return out
	}
	cases := []struct {
		opts       CleanOptions
		gone, kept []string
		refused    bool
	}{
		{CleanOptions{}, []string{"dead1", "dead2"}, []string{"live1", "live2"}, false},
		{CleanOptions{IncludeLive: true}, []string{"dead1", "live1", "dead2", "live2"}, nil, false},
		{CleanOptions{DryRun: true}, []string{"dead1", "dead2"}, []string{"live1", "live2"}, false},
		{CleanOptions{RunID: "dead2"}, []string{"dead2"}, nil, false},
		{CleanOptions{RunID: "live2"}, nil, nil, true},
		{CleanOptions{RunID: "live2", DryRun: true}, nil, nil, true},
		{CleanOptions{RunID: "live2", IncludeLive: true}, []string{"live2"}, nil, false},
		{CleanOptions{RunID: "gone"}, nil, nil, false},
	}
	for _, c := range cases {
		gone, kept, err := chooseRuns(runs, c.opts)
		if errors.Is(err, ErrLive) != c.refused {
			t.Errorf("%+v: error %v, refused want %v", c.opts, err, c.refused)
		}
		if !slices.Equal(ids(gone), c.gone) || !slices.Equal(ids(kept), c.kept) {
			t.Errorf("%+v: removes %v and keeps %v, want %v and %v", c.opts, ids(gone), ids(kept), c.gone, c.kept)
		}
	}
}
