package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockbench/lockbench/catalog"
	"github.com/lockbench/lockbench/config"
	"github.com/lockbench/lockbench/matrix"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/runner"
)

// noCatalog, given as --catalog, records nowhere.
const noCatalog = "none"

// recorder records each judged run of a command in its catalog. A nil
// recorder records nothing: --catalog none, a check of a directory under
// no results root, or the lockbench inside a controller container, whose
// runs the calling host records after the copy-back (a catalog written
// inside would come back over the caller's).
type recorder struct {
	c    *catalog.Catalog
	path string
	// measured, when set, is a measured directory each matrix run is
	// also added to, one line in its cell's file.
	measured string
}

// measureInto imports the measured directory dir into the catalog, so
// that the runs measured elsewhere count, and adds each run recorded from
// here on to it; "" does nothing.
func (r *recorder) measureInto(dir string, w io.Writer) error {
	if dir == "" {
		return nil
	}
	if _, err := os.Stat(dir); err == nil {
		n, _, err := r.c.Import(dir)
		if err != nil {
			return fail(exitUsage, fmt.Errorf("--measured %s: %w", dir, err))
		}
		fmt.Fprintf(w, "imported %d measured run(s) from %s into %s\n", n, dir, r.path)
	}
	r.measured = dir
	return nil
}

// recorder opens the catalog for runs under the results root root ("" for
// none). It is opened before anything runs, so that a file that is no
// catalog is refused before a run is spent on it.
func (c catalogFlag) recorder(root string) (*recorder, error) {
	path := c.at(root)
	if path == "" || path == noCatalog || os.Getenv(controllerEnv) != "" {
		return nil, nil
	}
	cat, err := openCatalog(path)
	if err != nil {
		return nil, err
	}
	return &recorder{c: cat, path: cat.Name()}, nil
}

// record records the judged run in dir: in one transaction, its
// configuration once and this judgment beside any earlier ones.
func (r *recorder) record(dir string) error {
	if r == nil {
		return nil
	}
	e, err := catalog.Judged(dir)
	if err == nil {
		err = r.c.Record(e)
	}
	if err != nil {
		return fail(exitHarness, fmt.Errorf("record %s in the catalog %s: %w", dir, r.path, err))
	}
	// An interrupted run said nothing of its cell: its seed runs again.
	if r.measured != "" && e.Test.Cell != nil && !e.Test.Interrupted {
		if err := catalog.AppendMeasured(catalog.MeasuredPath(r.measured, e.Test.Cell.Name), e.Measured()); err != nil {
			return fail(exitHarness, err)
		}
	}
	return nil
}

// recordNew records the judged runs under root that are not in before: the
// runs a controller container brought back.
func (r *recorder) recordNew(root string, before map[string]bool) error {
	if r == nil {
		return nil
	}
	for _, dir := range runDirs(root) {
		if before[dir] {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, rundir.ResultsFile)); err != nil {
			continue // cut short before its judgment: recorded once checked
		}
		if err := r.record(dir); err != nil {
			return err
		}
	}
	return nil
}

func (r *recorder) close() {
	if r != nil {
		r.c.Close()
	}
}

// runDirs are the run directories (those holding a test.json) under root.
func runDirs(root string) []string {
	var dirs []string
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if _, err := os.Stat(filepath.Join(path, rundir.TestFile)); err == nil {
			dirs = append(dirs, path)
			return filepath.SkipDir
		}
		return nil
	})
	return dirs
}

// seen is the set of runDirs(root).
func seen(root string) map[string]bool {
	m := map[string]bool{}
	for _, d := range runDirs(root) {
		m[d] = true
	}
	return m
}

// resultsRootOf is the results root a run directory sits under,
// <root>/<test name>/<start>, or "" when dir is not laid out so.
func resultsRootOf(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	test, _, err := rundir.ReadTest(abs)
	if err != nil {
		return ""
	}
	name := string(filepath.Separator) + filepath.Clean(test.Name)
	parent := filepath.Dir(abs)
	if _, err := time.Parse(rundir.StartLayout, filepath.Base(abs)); err != nil || !strings.HasSuffix(parent, name) {
		return ""
	}
	return cmp.Or(strings.TrimSuffix(parent, name), string(filepath.Separator))
}

// recording is run, recording each run it judged: the runner of a matrix,
// whose parallel cells record at once (the catalog's writers take turns).
func (r *recorder) recording(run matrix.Runner) matrix.Runner {
	if r == nil {
		return run
	}
	return func(ctx context.Context, cfg config.Config, opts runner.Options) (*rundir.Results, error) {
		rep, err := run(ctx, cfg, opts)
		if rep != nil {
			if rerr := r.record(rep.Dir); rerr != nil {
				return rep, errors.Join(err, rerr)
			}
		}
		return rep, err
	}
}
