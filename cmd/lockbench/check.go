package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockbench/lockbench/backends"
	"github.com/lockbench/lockbench/runner"
	"github.com/lockbench/lockbench/verdict"
)

func newCheckCmd() *cobra.Command {
	var (
		checkTO time.Duration
		out     output
		cat     catalogFlag
	)
	cmd := &cobra.Command{
		Use:   "check DIR",
		Short: "Re-run every checker on a stored run and rewrite its results (no Docker needed)",
		Example: `  # judge a stored run again (after a checker changed, or a harness that died)
  lockbench check results/redis-counter-pause-fence-none/20261202T094515.549Z
  # the verdict as JSON, for scripts
  lockbench check --json results/redis-counter-pause-fence-none/20261202T094515.549Z | jq .verdict`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeRunDirs,
		RunE: func(_ *cobra.Command, args []string) error {
			if checkTO <= 0 {
				return fail(exitUsage, fmt.Errorf("--check-timeout must be positive, got %s", checkTO))
			}
			// The run is recorded in its results root's catalog, if it
			// sits under one; --catalog names another.
			rec, err := cat.recorder(resultsRootOf(args[0]))
			if err != nil {
				return err
			}
			defer rec.close()
			rep, err := verdict.Check(args[0], verdict.Options{LinearTimeout: checkTO, Lease: backends.LeaseOf})
			switch {
			case verdict.IsBadInput(err):
				return fail(exitUsage, err)
			case err != nil:
				return fail(exitHarness, err)
			}
			rep.Print(out.human())
			if err := rec.record(rep.Dir); err != nil {
				return err
			}
			if err := out.emit(newRunJSON(rep)); err != nil {
				return err
			}
			// Judged again, a run stopped at its first anomaly is
			// discarded by the rule run applied to it.
			if err := runner.Discard(rep); err != nil {
				return fail(exitHarness, err)
			}
			return verdictExit(rep.Verdict)
		},
	}
	cmd.Flags().DurationVar(&checkTO, "check-timeout", time.Minute, "bound on the linearizability search")
	out.add(cmd.Flags())
	cat.add(cmd.Flags())
	return cmd
}
