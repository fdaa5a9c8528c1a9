package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/lockbench/lockbench/runner"
)

func newComposeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "compose",
		Short: "Print docker-compose.yml for the default clusters (redis, redlock, redis-sentinel, etcd, store)",
		Args:  cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			out, err := runner.Compose()
			if err != nil {
				return fail(exitHarness, err)
			}
			_, err = os.Stdout.Write(out)
			return err
		},
	}
}
