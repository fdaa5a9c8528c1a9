package main

import (
	"encoding/json"
	"fmt"
	"github.com/lockbench/lockbench/rundir"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/lockbench/lockbench/checkers"
)

// output is where a command writes: with --json, stdout carries one JSON
// document and nothing else, so everything for people goes to stderr.
type output struct{ json bool }

func (o *output) add(f *pflag.FlagSet) {
	f.BoolVar(&o.json, "json", false, "print one machine-readable summary (JSON) on stdout; everything else goes to stderr")
}

// human is where messages for people go.
func (o *output) human() io.Writer {
	if o.json {
		return os.Stderr
	}
	return os.Stdout
}

// emit prints v as the command's JSON summary, when --json asked for one.
func (o *output) emit(v any) error {
	if !o.json {
		return nil
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fail(exitHarness, fmt.Errorf("print the JSON summary: %w", err))
	}
	return nil
}

// runJSON is one run as --json prints it: results.json's fields, as
// stored, and where the run's files are.
type runJSON struct {
	*rundir.Results
	// RunID labels the run's containers (`lockbench clean --run ID`).
	RunID string   `json:"run_id"`
	Dir   string   `json:"dir"`
	Files runFiles `json:"files"`
}

type runFiles struct {
	Results   string `json:"results"`
	Report    string `json:"report"`
	Linear    string `json:"linear"`
	Anomalies string `json:"anomalies"`
	History   string `json:"history"`
	Store     string `json:"store"`
}

func newRunJSON(rep *rundir.Results) runJSON {
	at := func(name string) string { return filepath.Join(rep.Dir, name) }
	// results.json does not hold the run id; test.json does, and was read
	// before the run was judged, so it cannot be missing here.
	test, _, _ := rundir.ReadTest(rep.Dir)
	return runJSON{Results: rep, RunID: test.RunID, Dir: rep.Dir, Files: runFiles{Results: at(rundir.ResultsFile), Report: at(rundir.HTMLFile),
		Linear: at(rundir.LinearFile), Anomalies: at(rundir.AnomaliesFile), History: at(rundir.HistoryFile), Store: at(rundir.StoreFile)}}
}

// seriesJSON is a --test-count series as --json prints it.
type seriesJSON struct {
	Verdict checkers.Verdict `json:"verdict"`
	Count   int              `json:"test_count"`
	Runs    []runJSON        `json:"runs"`
}
