// Package rundir owns a run's directory: its place in the results tree,
// the names of its files, and the schemas of test.json and results.json
// with their reading and writing. The runner writes a run, the report
// draws it and the matrix links to it, all through this one description.
package rundir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/config"
	"github.com/lockbench/lockbench/history"
)

// Files of a run's directory.
const (
	TestFile      = "test.json"
	HistoryFile   = "history.jsonl"
	StoreFile     = "store.log"
	ResultsFile   = "results.json"
	LogsDir       = "logs"
	HTMLFile      = "report.html"
	LinearFile    = "linear.html"
	AnomaliesFile = "anomalies.md"
)

// Files of a matrix's directory; matrix.json is what marks one.
const (
	MatrixJSON     = "matrix.json"
	MatrixMarkdown = "matrix.md"
)

// CompareFile is the page lockbench compare --format html writes in a
// results root, which serve's index links to.
const CompareFile = "compare.html"

// StartLayout names a run's directory inside its test's: its start time.
const StartLayout = "20060102T150405.000Z"

// Path is the directory of the run of the test named name started at
// start, under the results tree root: <root>/<name>/<start>.
func Path(root, name string, start time.Time) string {
	return filepath.Join(root, name, start.UTC().Format(StartLayout))
}

// Test is test.json: everything needed to understand and re-check a run.
type Test struct {
	Name    string        `json:"name"`
	RunID   string        `json:"run_id"`
	Start   time.Time     `json:"start"`
	Command []string      `json:"command,omitempty"`
	Config  config.Config `json:"config"`
	Image   string        `json:"image"`
	// Images are the other images the service's nodes run, by kind
	// (images.Kind), when it has any.
	Images   map[string]string `json:"images,omitempty"`
	Versions map[string]string `json:"versions"`
	// Health is what the service's health check said before the workload.
	Health string `json:"health,omitempty"`
	// HostClass is the engine host's, whose cores and storage bound the
	// service's latency; absent in runs recorded before it was.
	HostClass *HostClass `json:"host_class,omitempty"`
	// Controller is where the harness ran, whose clock stamped the history.
	Controller Controller `json:"controller"`
	// End is set once the clients have stopped and their events are all
	// recorded; a run without it was cut short (the harness was killed).
	End *time.Time `json:"end,omitempty"`
	// Interrupted is set when the run was stopped before its time limit
	// (Ctrl-C, a signal): its verdict covers only part of a run, so it is
	// no verdict on the run.
	Interrupted bool `json:"interrupted,omitempty"`
	// Cell is the matrix cell the run was one of; absent for a run of its
	// own.
	Cell *Cell `json:"cell,omitempty"`
	// Stopped is set when --stop-at-first-anomaly ended the run before
	// its time limit.
	Stopped *Stop `json:"stopped_at_first_anomaly,omitempty"`
}

// Cell is a run's place in a matrix: what pools it with the cell's other
// runs, across invocations and machines.
type Cell struct {
	// Name is the cell's name (matrix.Cell.Name).
	Name string `json:"name"`
	// Flags is the digest of everything the grid set on its runs besides
	// the cell's own axes and the seed: runs pool only when it matches.
	Flags string `json:"flags"`
	// Spec is the cell itself (matrix.Cell), from which its expectation
	// is found again.
	Spec json.RawMessage `json:"spec"`
}

// Stop is how a run ended early at its first anomaly: the live count of
// stale writes (those the store certainly accepted from a holder whose
// token was no longer the newest) went above 0, and the workload then
// ended as it does at the time limit. Times are on the history's clock,
// ns since its time 0, so both can be found in history.jsonl.
type Stop struct {
	// At is when the workload was told to stop.
	At int64 `json:"at_ns"`
	// Write is the time of the ok of the stale write that tripped the
	// stop, and Process the client that sent it.
	Write   int64  `json:"write_ns"`
	Process string `json:"process"`
}

// Discarded reports whether a run with verdict v, stopped at its first
// anomaly when stopped, stands for no verdict at all. A stopped run is
// cut short at the moment it looked broken; if the full check does not
// confirm that it is invalid, what is left proves nothing (it is not a
// run of the test's length), so it counts as an error, never as valid.
func Discarded(stopped bool, v checkers.Verdict) bool {
	return stopped && v != checkers.Invalid
}

// HostClass is what makes two runs' latencies comparable: the engine
// host's cores, the engine's version and its storage driver.
type HostClass struct {
	Cores         int    `json:"cores"`
	Engine        string `json:"engine"`
	StorageDriver string `json:"storage_driver"`
}

// String is the class as the catalog keys it.
func (h HostClass) String() string {
	return fmt.Sprintf("%d cores, engine %s, %s", h.Cores, h.Engine, h.StorageDriver)
}

// Controller is where a run's harness ran. History times are read from
// one kernel's monotonic clock, shared by the harness and every container
// of the run only when the harness runs on the engine's host.
type Controller struct {
	// OnEngine is set when the harness ran in a container on the engine's
	// host, started from a machine that reached the engine remotely.
	OnEngine bool `json:"on_engine"`
	// Host is the harness's host name (the container's, on the engine).
	Host string `json:"host"`
	// Engine is the engine's address as the user gave it (DOCKER_HOST;
	// empty for the default local socket).
	Engine string `json:"engine,omitempty"`
}

// ResultsSchema is the version of results.json's layout; it grows when a
// field changes meaning or goes away, so that tools reading stored runs can
// tell which they have. 2: faults[] gained healthy and unhealthy (the
// service's recovery after each heal), and a fault on the service counts
// as in force until the service is healthy again.
const ResultsSchema = 2

// Results is results.json: the verdict of every checker on one run.
type Results struct {
	Dir    string `json:"-"`
	Schema int    `json:"schema"`
	// Lockbench is the version of the lockbench that judged the run, which
	// may be newer than the one that ran it (test.json's).
	Lockbench string            `json:"lockbench"`
	Test      string            `json:"test"`
	Seed      int64             `json:"seed"`
	Verdict   checkers.Verdict  `json:"verdict"`
	Checkers  []checkers.Result `json:"checkers"`
	// Evidence qualifies a valid verdict whose faults never reached a
	// holder (checkers.WeakEvidence); empty otherwise.
	Evidence string `json:"evidence,omitempty"`
	Events   int    `json:"events"`
	// Lease is the lease model the exclusion checker judged the lock by.
	Lease   checkers.Lease `json:"lease"`
	Notes   []string       `json:"notes,omitempty"`
	Checked time.Time      `json:"checked"`
	// Stopped is test.json's: set when the run was stopped at its first
	// anomaly, which makes a verdict other than invalid no verdict (see
	// Discarded).
	Stopped *Stop `json:"stopped_at_first_anomaly,omitempty"`
}

// Discarded reports whether the run stands for no verdict (see the
// function Discarded).
func (rep *Results) Discarded() bool { return Discarded(rep.Stopped != nil, rep.Verdict) }

// CutShortNote is the note a check or a report makes of a history or a
// store log whose last line a crash cut short (history.ErrTruncated,
// store.ErrTruncated, err): both are read up to that line, alike.
func CutShortNote(file string, err error) string {
	return fmt.Sprintf("%s: %v; that line was ignored", file, err)
}

// ErrNotARun marks a directory that holds no readable run.
var ErrNotARun = errors.New("not a lockbench run")

// ReadTest reads the test.json of the run stored in dir, and returns it
// decoded and as it is on disk; a directory without one is ErrNotARun.
func ReadTest(dir string) (Test, []byte, error) {
	var test Test
	data, err := os.ReadFile(filepath.Join(dir, TestFile))
	if err != nil {
		return test, nil, fmt.Errorf("%w: %s: %w", ErrNotARun, dir, err)
	}
	if err := json.Unmarshal(data, &test); err != nil {
		return test, nil, fmt.Errorf("%w: %s: %w", ErrNotARun, filepath.Join(dir, TestFile), err)
	}
	return test, data, nil
}

// ReadResults reads the results.json of the run stored in dir.
func ReadResults(dir string) (Results, error) {
	res := Results{Dir: dir}
	data, err := os.ReadFile(filepath.Join(dir, ResultsFile))
	if err != nil {
		return res, fmt.Errorf("read %s: %w", ResultsFile, err)
	}
	if err := json.Unmarshal(data, &res); err != nil {
		return res, fmt.Errorf("%s: %w", filepath.Join(dir, ResultsFile), err)
	}
	return res, nil
}

// WriteJSON writes v, indented, to the file name of dir.
func WriteJSON(dir, name string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

// Print writes the verdict for people: one line per checker with its first
// anomalies, then the overall verdict and where the evidence is.
func (rep *Results) Print(w io.Writer) {
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	for _, r := range rep.Checkers {
		fmt.Fprintf(w, "  %-13s %-8s %s\n", r.Checker, r.Valid, r.Summary)
		if r.Reason != "" {
			fmt.Fprintf(w, "  %13s          %s\n", "", r.Reason)
		}
		for i, a := range r.Anomalies {
			if i == 3 {
				fmt.Fprintf(w, "  %13s          … %d more in %s\n", "", len(r.Anomalies)-i, ResultsFile)
				break
			}
			fmt.Fprintf(w, "  %13s          %s: %s\n", "", a.Kind, a.Message)
		}
	}
	if s := rep.Stopped; s != nil {
		fmt.Fprintf(w, "stopped at its first anomaly: %s's stale write at %s, the workload told to stop at %s\n",
			s.Process, history.Seconds(s.Write), history.Seconds(s.At))
	}
	verdict := string(rep.Verdict)
	if rep.Evidence != "" {
		verdict = rep.Evidence
	}
	fmt.Fprintf(w, "verdict: %s (%s, seed %d)\nresults: %s\nreport:  %s\n", verdict, rep.Test, rep.Seed, rep.Dir,
		filepath.Join(rep.Dir, HTMLFile))
}
