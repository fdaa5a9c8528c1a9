package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/store"
)

// Report is results.json: the verdict of every checker on one run.
type Report struct {
	Dir      string            `json:"-"`
	Test     string            `json:"test"`
	Seed     int64             `json:"seed"`
	Verdict  checkers.Verdict  `json:"verdict"`
	Checkers []checkers.Result `json:"checkers"`
	Events   int               `json:"events"`
	Notes    []string          `json:"notes,omitempty"`
	Checked  time.Time         `json:"checked"`
}

// Check runs every checker on the run stored in dir and writes results.json.
// It needs nothing but the directory's files.
func Check(dir string, linearTimeout time.Duration) (*Report, error) {
	var test Test
	data, err := os.ReadFile(filepath.Join(dir, TestFile))
	if err != nil {
		return nil, fmt.Errorf("not a lockbench run: %w", err)
	}
	if err := json.Unmarshal(data, &test); err != nil {
		return nil, fmt.Errorf("%s: %w", TestFile, err)
	}
	rep := &Report{Dir: dir, Test: test.Name, Seed: test.Config.Seed, Checked: time.Now().UTC()}
	events, err := history.DecodeFile(filepath.Join(dir, HistoryFile))
	if errors.Is(err, history.ErrTruncated) {
		rep.Notes = append(rep.Notes, fmt.Sprintf("the history's last line is incomplete and was ignored: %v", err))
	} else if err != nil {
		return nil, err
	}
	log, err := store.ReadLogFile(filepath.Join(dir, StoreFile))
	if err != nil {
		return nil, err
	}
	in := checkers.Input{History: events, Store: log, Key: Key}
	for _, c := range checkers.All(linearTimeout) {
		rep.Checkers = append(rep.Checkers, c.Check(in))
	}
	rep.Verdict = checkers.Overall(rep.Checkers)
	rep.Events = len(events)
	if err := writeJSON(filepath.Join(dir, ResultsFile), rep); err != nil {
		return nil, err
	}
	return rep, nil
}

// Print writes the verdict for people: one line per checker with its first
// anomalies, then the overall verdict and where the evidence is.
func (rep *Report) Print(w io.Writer) {
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
	fmt.Fprintf(w, "verdict: %s (%s, seed %d)\nresults: %s\n", rep.Verdict, rep.Test, rep.Seed, rep.Dir)
}

// Version is the lockbench module version and VCS revision, when known.
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" {
			v += " " + s.Value
		}
	}
	return v
}
