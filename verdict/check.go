// Package verdict judges a stored run from its directory alone: it reads
// the history and the store log (refusing what no run can have recorded,
// repairing what a dying harness can leave), runs the checkers, and writes
// results.json and the report pages. It needs no Docker: run, check,
// serve, export and the catalog all judge through it.
package verdict

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/config"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/report"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/store"
)

// IsBadInput reports whether err is about the files handed to Check rather
// than about the harness: a path that holds no run, or a history or store
// log no run can have recorded. Such input is refused, never judged.
func IsBadInput(err error) bool {
	return errors.Is(err, rundir.ErrNotARun) || errors.Is(err, history.ErrMalformed) || errors.Is(err, store.ErrMalformed)
}

// LeaseModel is the lease model of a run's lock, as its lock service
// supplies it: what judging needs of a service, and no more, so that
// judging does not depend on how services are started.
type LeaseModel func(cfg config.Config) checkers.Lease

// Options are how a stored run is judged.
type Options struct {
	// LinearTimeout bounds the linearizability search; 0 means no bound.
	LinearTimeout time.Duration
	// Lease gives the run's lease model; nil judges every run as one of a
	// lock whose leases are unknown.
	Lease LeaseModel
}

// Check runs every checker on the run stored in dir and writes results.json.
// It needs nothing but the directory's files.
func Check(dir string, o Options) (*rundir.Results, error) {
	linearTimeout := o.LinearTimeout
	test, data, err := rundir.ReadTest(dir)
	if err != nil {
		return nil, err
	}
	rep := &rundir.Results{Dir: dir, Schema: rundir.ResultsSchema, Lockbench: Version(), Test: test.Name, Seed: test.Config.Seed, Checked: time.Now().UTC(),
		Stopped: test.Stopped}
	// The history and the store log are read side by side: each decodes
	// its lines on every core, but each also has passes on one core
	// (counting the lines, judging them in order) that the other fills.
	var (
		log    []store.Entry
		logErr error
		read   sync.WaitGroup
	)
	read.Go(func() { log, logErr = store.ReadLogFile(filepath.Join(dir, rundir.StoreFile)) })
	events, err := timeOrdered(dir)
	read.Wait()
	switch {
	case errors.Is(err, history.ErrTruncated):
		rep.Notes = append(rep.Notes, rundir.CutShortNote(rundir.HistoryFile, err))
	case errors.Is(err, os.ErrNotExist):
		// test.json without a history: a run that never got to record,
		// or a directory put together by hand. Nothing to judge, and
		// judging nothing as valid would be a guess.
		return nil, fmt.Errorf("%w: %s has no %s", rundir.ErrNotARun, dir, rundir.HistoryFile)
	case err != nil:
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, rundir.HistoryFile), err)
	}
	// A run whose harness was killed has no store log until clean saves
	// it from the store's container: the history is judged without it.
	var noStore string
	switch {
	case errors.Is(logErr, os.ErrNotExist):
		noStore = noStoreLog(test.RunID)
	case errors.Is(logErr, store.ErrTruncated):
		rep.Notes = append(rep.Notes, rundir.CutShortNote(rundir.StoreFile, logErr))
	case logErr != nil:
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, rundir.StoreFile), logErr)
	}
	if err := checkers.ValidateWorkload(test.Config.Workload, events); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, rundir.HistoryFile), err)
	}
	if test.End == nil {
		var note string
		events, log, note = cut(events, log)
		rep.Notes = append(rep.Notes, note)
	}
	in := checkers.Prepare(checkers.Input{History: events, Store: log, NoStore: noStore, Key: config.Key, Lease: o.lease(test.Config)})
	if err := in.Lease.Validate(events); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, rundir.HistoryFile), err)
	}
	// Checkers are pure functions of the input: they judge it side by
	// side, on every core. A checker that panics has judged nothing: its
	// verdict is unknown, and the panic, which a goroutine of its own
	// would otherwise turn into the end of the process, is its reason.
	cs := checkers.For(test.Config.Workload, linearTimeout)
	rep.Checkers = make([]checkers.Result, len(cs))
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Go(func() {
			defer func() {
				if p := recover(); p != nil {
					rep.Checkers[i] = checkers.Result{Checker: c.Name(), Valid: checkers.Unknown,
						Summary: "the checker failed", Reason: fmt.Sprintf("the checker failed: %v", p)}
				}
			}()
			rep.Checkers[i] = c.Check(in)
		})
	}
	wg.Wait()
	rep.Verdict = checkers.Overall(rep.Checkers)
	rep.Evidence = checkers.Evidence(rep.Verdict, rep.Checkers)
	rep.Events, rep.Lease = len(events), in.Lease
	if err := rundir.WriteJSON(dir, rundir.ResultsFile, rep); err != nil {
		return nil, err
	}
	// The verdict stands without the pages: a report that cannot be drawn
	// is a note, not a failed check.
	// The checkers' working memory is garbage now, and the report is
	// about to draw as much again: collected here, it is drawn in the
	// memory they left, where the collector's pacing would only have
	// collected once the heap had grown past it. For a check of 10⁶ events
	// that is 40 MB less at the peak (530 MB before), at no cost in time.
	runtime.GC()
	// The report draws from what the checkers derived, not again.
	ops, _ := in.Refs()
	if err := report.Write(dir, report.Input{Test: data, History: events, Store: log, Ops: ops, Sections: in.Sections(),
		Results: rep.Checkers, Verdict: rep.Verdict, Notes: rep.Notes, Key: config.Key, Lease: in.Lease, LinearTimeout: linearTimeout}); err != nil {
		note := fmt.Sprintf("report pages not written: %v", err)
		if errors.Is(err, report.ErrDegraded) {
			note = err.Error()
		}
		rep.Notes = append(rep.Notes, note)
		if err := rundir.WriteJSON(dir, rundir.ResultsFile, rep); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// noStoreLog is why the store's decisions are not judged in the run runID,
// which has no store log.
func noStoreLog(runID string) string {
	if runID == "" {
		runID = "ID"
	}
	return fmt.Sprintf("no %s: if the harness was killed, `lockbench clean --run %s` saves it", rundir.StoreFile, runID)
}

// lease is the lease model of the run's lock.
func (o Options) lease(cfg config.Config) checkers.Lease {
	if o.Lease == nil {
		return checkers.Lease{None: "no lease model was given to judge this run by"}
	}
	return o.Lease(cfg)
}

// History is the history of the run stored in dir, as Check judges it.
func History(dir string) ([]history.Event, error) {
	events, err := timeOrdered(dir)
	if err != nil && !errors.Is(err, history.ErrTruncated) {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, rundir.HistoryFile), err)
	}
	return events, nil
}

// timeOrdered reads a run's history, refusing it unless it is well formed
// in the order it was written (arrival order while the run went), and puts
// it in time order. When that differs from the file, as it does for a run
// whose harness died before its end, the file is rewritten in time order,
// so that the indexes results.json and the reports cite are its own.
func timeOrdered(dir string) ([]history.Event, error) {
	path := filepath.Join(dir, rundir.HistoryFile)
	events, err := history.DecodeFile(path)
	if err != nil && !errors.Is(err, history.ErrTruncated) {
		return nil, err
	}
	if history.InTimeOrder(events) {
		if werr := history.Rewrite(path, events); werr != nil {
			return nil, werr
		}
	}
	return events, err
}

// Set at link time (the Makefile's -X flags) for builds in which Go stamps
// no VCS information: GOFLAGS=-buildvcs=false, or a git worktree, whose
// .git is a file the go command does not recognise.
var (
	linkedVersion  string
	linkedRevision string
)

// Version is the lockbench module version and VCS revision, as Go stamped
// them into the binary or, failing that, as the build linked them in.
func Version() string {
	version, revision := linkedVersion, linkedRevision
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			version = v
		}
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision":
				revision = s.Value
			case s.Key == "vcs.modified" && s.Value == "true":
				revision += "-dirty"
			}
		}
	}
	if version == "" {
		version = "(devel)"
	}
	if revision == "" {
		revision = "unknown"
	}
	return version + " revision " + revision
}

// cut trims the record of a run whose harness died to the part every client's
// record covers. Each client's events arrive in order, so up to the earliest
// of the clients' last recorded times nothing is missing; past it, a client
// whose stream lagged may have done things the history never saw, and
// judging those would invent anomalies. The store's log, which kept going,
// is trimmed to the same time and to requests the history knows.
//
// A client whose silence the faults explain does not pull the horizon back
// to its last event, since what it had printed before the fault struck
// reached the harness while it was silent:
//   - a client killed by kill-client (history.Killed) never comes back,
//     whatever heal follows: its record ends at its death, complete;
//   - a target of a fault still in force when the record ends (a pause
//     whose stop was never recorded) printed nothing since the fault
//     struck, and would have printed nothing more.
//
// A heal ends only its own fault: a stop clears the targets of the open
// faults of its name (one kind's stop heals all of that kind's open
// faults, as the checkers read the nemesis), so that a kill-client's
// immediate heal leaves a client another fault still freezes exempt.
// Once its fault's stop is recorded, a paused client is running again, and
// its silence after its last event is as unexplained as any other
// client's. The healthy event, which says when the service answers again,
// changes nothing here: a healed service's clients print what it tells
// them (or that it does not answer) like any others.
//
// Every target of a fault in force counts as silenced. That is exact for
// a pause and for the faults that hold a client at a failpoint; a client
// whose link a fault degrades goes on, starved of replies, and is
// trusted the same way, since the record does not say which faults stop
// their targets.
func cut(events []history.Event, log []store.Entry) ([]history.Event, []store.Entry, string) {
	last := map[string]int64{}
	exempt := map[string]bool{}      // killed: for good
	inForce := map[string][]string{} // open faults' targets, by fault name
	for _, e := range events {
		switch {
		case e.Process == history.Nemesis && e.Type == history.Info && e.F == history.Start:
			for _, c := range history.Killed(e) {
				exempt[c] = true
			}
			inForce[e.Fault] = append(inForce[e.Fault], e.Targets...)
		case e.Process == history.Nemesis && e.Type == history.Info && e.F == history.Stop:
			delete(inForce, e.Fault)
		case e.Process != history.Nemesis:
			// A lease process falls silent between holdings: its
			// client's record is what must be complete.
			p := e.Process
			if owner, ok := history.LeaseOwner(p); ok {
				p = owner
			}
			last[p] = max(last[p], e.Time)
		}
	}
	for _, targets := range inForce {
		for _, c := range targets {
			exempt[c] = true
		}
	}
	horizon := int64(math.MaxInt64)
	for c, t := range last {
		if !exempt[c] {
			horizon = min(horizon, t)
		}
	}
	var keptEvents []history.Event
	reqs := map[string]bool{}
	for _, e := range events {
		if e.Time <= horizon {
			keptEvents = append(keptEvents, e)
			if e.Req != "" {
				reqs[e.Req] = true
			}
		}
	}
	var keptLog []store.Entry
	for _, e := range log {
		if e.Time <= horizon && reqs[e.Req] {
			keptLog = append(keptLog, e)
		}
	}
	when := "its start"
	if horizon != math.MaxInt64 && len(last) > 0 {
		when = history.Seconds(horizon)
	}
	var silenced []string
	for c := range last {
		if exempt[c] {
			silenced = append(silenced, c)
		}
	}
	waived := ""
	if len(silenced) > 0 {
		slices.Sort(silenced)
		waived = fmt.Sprintf(" (not waiting for %s: killed, or still struck by a fault, when the record ends)", strings.Join(silenced, ", "))
	}
	return keptEvents, keptLog, fmt.Sprintf(
		"the run did not finish (its harness stopped): judged up to %s, where every client's record is complete%s; %d events and %d store requests after that were left out",
		when, waived, len(events)-len(keptEvents), len(log)-len(keptLog))
}
