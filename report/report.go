// Package report turns a stored run into pages for people: report.html (the
// verdict, a timeline of who believed it held the lock and what it wrote,
// latency and throughput plots, the anomalies), linear.html (porcupine's
// own view of the linearizability search) and anomalies.md (each anomaly
// told as a story, with a sequence diagram).
//
// The package does not import runner, which calls it: Write takes what the
// runner has already parsed, and Load reads the same from a run's files,
// whose names and schemas are rundir's.
package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/store"

	"github.com/lockbench/lockbench/rundir"
)

// DefaultLinearTimeout bounds the search behind linear.html when
// Input.LinearTimeout is zero.
const DefaultLinearTimeout = time.Minute

// Input is everything a report is drawn from.
type Input struct {
	// Test is test.json as stored. Only a few fields are read by name; the
	// whole configuration is shown as it is, so fields added later appear
	// without a change here.
	Test    json.RawMessage
	History []history.Event
	Store   []store.Entry
	Results []checkers.Result
	Verdict checkers.Verdict
	// Notes are remarks of the check, such as a truncated history.
	Notes []string
	// Ops and Sections are the history's operations (history.Refs) and its
	// critical sections on Key (checkers.Sections), when the caller has
	// derived them already; nil, the report derives them.
	Ops      []history.Ref
	Sections []checkers.Section
	// Key is the counter's key; "" takes every key.
	Key string
	// Lease is the lease model the run's lock was judged by.
	Lease checkers.Lease
	// LinearTimeout bounds porcupine's search for linear.html; zero means
	// DefaultLinearTimeout.
	LinearTimeout time.Duration
}

// Load reads a stored run, for re-rendering its report without re-checking
// it. test.json and history.jsonl must be there; a run without store.log
// or never checked (no results.json) gets a report that says so.
func Load(dir, key string) (Input, error) {
	in := Input{Key: key}
	var err error
	if in.Test, err = os.ReadFile(filepath.Join(dir, rundir.TestFile)); err != nil {
		return in, fmt.Errorf("not a lockbench run: %w", err)
	}
	in.History, err = history.DecodeFile(filepath.Join(dir, rundir.HistoryFile))
	if errors.Is(err, history.ErrTruncated) {
		in.Notes = append(in.Notes, rundir.CutShortNote(rundir.HistoryFile, err))
	} else if err != nil {
		return in, fmt.Errorf("load %s: %w", dir, err)
	}
	// A run cut short may lack the store's log; its history still shows.
	switch in.Store, err = store.ReadLogFile(filepath.Join(dir, rundir.StoreFile)); {
	case errors.Is(err, os.ErrNotExist):
		in.Notes = append(in.Notes, "no "+rundir.StoreFile+": the store's decisions are not shown")
	case errors.Is(err, store.ErrTruncated):
		in.Notes = append(in.Notes, rundir.CutShortNote(rundir.StoreFile, err))
	case err != nil:
		return in, fmt.Errorf("load %s: %w", dir, err)
	}
	res, err := rundir.ReadResults(dir)
	if errors.Is(err, os.ErrNotExist) {
		in.Notes = append(in.Notes, "the run has not been checked: no "+rundir.ResultsFile)
		return in, nil
	}
	if err != nil {
		return in, fmt.Errorf("load %s: %w", dir, err)
	}
	in.Verdict, in.Results, in.Lease = res.Verdict, res.Checkers, res.Lease
	in.Notes = append(in.Notes, res.Notes...)
	return in, nil
}

// ErrDegraded marks a Write that wrote every page but had to draw some of
// them without what failed to draw.
var ErrDegraded = errors.New("report pages drawn in part")

// Write renders report.html, linear.html and anomalies.md into dir. Drawing
// never takes the verdict with it, and one page that fails to draw costs
// only that page: report.html is drawn again from the verdict alone with a
// note saying what failed, the other pages are drawn from the full
// analysis. Every page is still written; the error then wraps ErrDegraded
// and names what failed, so that the caller can say so next to the verdict.
func Write(dir string, in Input) error {
	var failed []error
	bare := func(err error) *analysis {
		return analyze(Input{Test: in.Test, Results: in.Results, Verdict: in.Verdict, Key: in.Key,
			Notes: append(slices.Clone(in.Notes), fmt.Sprintf("%v; the page shows the verdict without the timeline and plots", err))})
	}
	var an *analysis
	if err := recovered("the analysis", func() error { an = analyze(in); return nil }); err != nil {
		failed = append(failed, err)
		an = bare(err)
	}
	var page bytes.Buffer
	if err := recovered(rundir.HTMLFile, func() error { return an.writeHTML(&page) }); err != nil {
		failed = append(failed, err)
		page.Reset()
		if err := recovered(rundir.HTMLFile, func() error { return bare(err).writeHTML(&page) }); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, rundir.HTMLFile), page.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	var lin bytes.Buffer
	if err := recovered(rundir.LinearFile, func() error { return an.writeLinear(&lin) }); err != nil {
		failed = append(failed, err)
		lin.Reset()
		fmt.Fprintf(&lin, "<!doctype html><title>%s</title><p>%s</p>\n", rundir.LinearFile, html.EscapeString(err.Error()))
	}
	if err := os.WriteFile(filepath.Join(dir, rundir.LinearFile), lin.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	var md []byte
	if err := recovered(rundir.AnomaliesFile, func() error { md = an.markdown(); return nil }); err != nil {
		failed = append(failed, err)
		md = []byte(err.Error() + "\n")
	}
	if err := os.WriteFile(filepath.Join(dir, rundir.AnomaliesFile), md, 0o644); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if len(failed) > 0 {
		return fmt.Errorf("%w: %w", ErrDegraded, errors.Join(failed...))
	}
	return nil
}

// recovered runs draw, turning a panic into an error naming the page: a
// bug in drawing must cost a page, never the run's verdict.
func recovered(page string, draw func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("drawing %s failed: %v", page, p)
		}
	}()
	if err := draw(); err != nil {
		return fmt.Errorf("render %s: %w", page, err)
	}
	return nil
}
