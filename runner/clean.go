package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/lockbench/lockbench/clusters"
	"github.com/lockbench/lockbench/rundir"
)

// Clean removes what runs left behind (one run when runID is set, else all).
// A run whose harness died never copied its store's log: Clean saves it into
// the run's results directory first, so that `lockbench check` can still
// judge the run.
func Clean(ctx context.Context, eng *clusters.Engine, runID string) ([]clusters.Leftover, []string, error) {
	f := filters.NewArgs(filters.Arg("label", clusters.Label+".role=store"), filters.Arg("label", resultsLabel))
	if runID != "" {
		f.Add("label", clusters.Label+"="+runID)
	}
	var saved []string
	stores, err := eng.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return nil, nil, fmt.Errorf("list leftover stores: %w", err)
	}
	for _, c := range stores {
		dir := c.Labels[resultsLabel]
		dst := filepath.Join(dir, rundir.StoreFile)
		if _, err := os.Stat(dir); err != nil {
			continue // results moved or deleted: nothing to save into
		}
		if _, err := os.Stat(dst); err == nil {
			continue
		}
		data, err := clusters.CopyFile(ctx, eng, c.ID, storeLogPath)
		if err != nil {
			return nil, saved, fmt.Errorf("save store log of run %s: %w", c.Labels[clusters.Label], err)
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			return nil, saved, fmt.Errorf("save store log of run %s: %w", c.Labels[clusters.Label], err)
		}
		saved = append(saved, dst)
	}
	removed, err := eng.RemoveRuns(ctx, runID)
	return removed, saved, err
}
