package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/lockbench/lockbench/config"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/verdict"
)

func newExportCmd() *cobra.Command {
	var format, output string
	cmd := &cobra.Command{
		Use:   "export --format knossos DIR",
		Short: "Write a stored counter run's history for another checker (Jepsen EDN for Knossos's register model)",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			dir := args[0]
			if format != "knossos" {
				return fail(exitUsage, fmt.Errorf("--format %q: the one format is knossos", format))
			}
			test, _, err := rundir.ReadTest(dir)
			if err != nil {
				return fail(exitUsage, err)
			}
			if test.Config.Workload != "counter" {
				return fail(exitUsage, fmt.Errorf("%s is a %s run: Knossos's register model fits the counter workload only", dir, test.Config.Workload))
			}
			events, err := verdict.History(dir)
			switch {
			case verdict.IsBadInput(err):
				return fail(exitUsage, err)
			case err != nil:
				return fail(exitHarness, err)
			}
			if output == "-" {
				_, err := history.WriteKnossos(os.Stdout, events, config.Key)
				return exportErr(err)
			}
			if output == "" {
				output = filepath.Join(dir, "history.edn")
			}
			f, err := os.Create(output)
			if err != nil {
				return exportErr(err)
			}
			n, err := history.WriteKnossos(f, events, config.Key)
			if err := exportErr(errors.Join(err, f.Close())); err != nil {
				return err
			}
			fmt.Printf("%d operations written to %s\n", n, output)
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "knossos", "output format: knossos (Jepsen EDN, one operation a line)")
	cmd.Flags().StringVarP(&output, "output", "o", "", "where to write (default DIR/history.edn; - for stdout)")
	return cmd
}

func exportErr(err error) error {
	if err != nil {
		return fail(exitHarness, fmt.Errorf("export: %w", err))
	}
	return nil
}
