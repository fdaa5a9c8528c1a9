package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/lockbench/lockbench/clusters"
	"github.com/lockbench/lockbench/rundir"
)

// ErrLive refuses `clean --run ID` of a live run without IncludeLive.
var ErrLive = errors.New("the run is live")

// settleBound is how long Clean waits for the liveness record of a harness
// of this host that has ended to end too (see clusters.Engine.Settle): a
// moment on an idle engine, a few seconds on a busy one.
const settleBound = 10 * time.Second

// CleanOptions say what Clean may remove.
type CleanOptions struct {
	// RunID, when set, is the one run to remove; else every run that is
	// not live.
	RunID string
	// IncludeLive removes live runs too: their harness fails.
	IncludeLive bool
	// DryRun removes nothing and saves nothing: Clean says what it would.
	DryRun bool
}

// Cleaned is what Clean did, or with DryRun, would do.
type Cleaned struct {
	Removed []clusters.Leftover
	// Saved are the store logs saved into results directories.
	Saved []string
	// Kept are live runs left alone.
	Kept []clusters.RunState
}

// Clean removes what runs left behind: runs that are not live (see
// clusters.Runs), and with IncludeLive, live ones too. A run whose
// harness died never copied its store's log: Clean saves it into the
// run's results directory first, so that `lockbench check` can still judge
// the run. A live run's log is never copied: its harness saves it at its
// end, and a copy taken while the store still writes could be cut anywhere.
func Clean(ctx context.Context, eng *clusters.Engine, opts CleanOptions) (Cleaned, error) {
	objs, err := eng.Labelled(ctx)
	if err != nil {
		return Cleaned{}, err
	}
	runs := clusters.Runs(objs, time.Now())
	asked := slices.DeleteFunc(slices.Clone(runs), func(r clusters.RunState) bool { return opts.RunID != "" && r.ID != opts.RunID })
	if eng.Settle(ctx, asked, settleBound) {
		if objs, err = eng.Labelled(ctx); err != nil {
			return Cleaned{}, err
		}
		runs = clusters.Runs(objs, time.Now())
	}
	gone, kept, err := chooseRuns(runs, opts)
	done := Cleaned{Kept: kept}
	if err != nil {
		return done, err
	}
	var errs []error
	for _, r := range gone {
		if !r.Live {
			saved, err := saveStoreLog(ctx, eng, r, opts.DryRun)
			if err != nil {
				errs = append(errs, err)
				continue // a log that cannot be saved keeps its store
			}
			done.Saved = append(done.Saved, saved...)
		}
		if opts.DryRun {
			for _, o := range r.Objects {
				done.Removed = append(done.Removed, clusters.Leftover{Kind: o.Kind, Name: o.Name, RunID: o.RunID})
			}
			continue
		}
		removed, err := eng.RemoveRun(ctx, r.ID)
		done.Removed = append(done.Removed, removed...)
		errs = append(errs, err)
	}
	return done, errors.Join(errs...)
}

// saveStoreLog copies the store's log of run r, whose harness is gone, into
// its results directory when that directory is still there and lacks it;
// with dryRun it only names where it would go.
func saveStoreLog(ctx context.Context, eng *clusters.Engine, r clusters.RunState, dryRun bool) ([]string, error) {
	var saved []string
	for _, o := range r.Objects {
		dir := o.Labels[resultsLabel]
		if o.Kind != "container" || dir == "" {
			continue
		}
		dst := filepath.Join(dir, rundir.StoreFile)
		if _, err := os.Stat(dir); err != nil {
			continue // results moved or deleted: nothing to save into
		}
		if _, err := os.Stat(dst); err == nil {
			continue
		}
		if dryRun {
			saved = append(saved, dst)
			continue
		}
		data, err := clusters.CopyFile(ctx, eng, o.ID, storeLogPath)
		if cerrdefs.IsNotFound(err) {
			// A harness killed before its store's first write left no
			// log: nothing to save, and nothing to keep the store for.
			continue
		}
		if err != nil {
			return saved, fmt.Errorf("save store log of run %s: %w", r.ID, err)
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			return saved, fmt.Errorf("save store log of run %s: %w", r.ID, err)
		}
		saved = append(saved, dst)
	}
	return saved, nil
}

// chooseRuns splits runs into those opts remove and the live ones they
// keep; `--run ID` of a live run without IncludeLive is refused.
func chooseRuns(runs []clusters.RunState, opts CleanOptions) (gone, kept []clusters.RunState, err error) {
	for _, r := range runs {
		switch {
		case opts.RunID != "" && r.ID != opts.RunID:
		case r.Live && !opts.IncludeLive && opts.RunID != "":
			return nil, nil, fmt.Errorf("run %s: %w (%s); lockbench clean --run %s --include-live removes it, and its harness fails",
				r.ID, ErrLive, r.Why, r.ID)
		case r.Live && !opts.IncludeLive:
			kept = append(kept, r)
		default:
			gone = append(gone, r)
		}
	}
	return gone, kept, nil
}
