package main

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/lockbench/lockbench/store"
)

// newRawLockCmd is the floor that the workload's lock cycles are measured
// against: bare SET NX PX and compare-and-delete round trips, no history,
// no renewal; with --store, a read and a write of the store between them,
// the four round trips of a workload's cycle.
func newRawLockCmd() *cobra.Command {
	var addr, storeAddr string
	var duration time.Duration
	cmd := &cobra.Command{
		Use:    "rawlock",
		Short:  "Measure bare SET NX / compare-and-delete cycles per second against one Redis (with --store, a read and a write inside)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			rdb := redis.NewClient(&redis.Options{Addr: addr})
			defer rdb.Close()
			del := redis.NewScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`)
			ctx := context.Background()
			var st *store.Client
			if storeAddr != "" {
				st = store.NewClient(storeAddr, time.Second)
			}
			var cycles int
			start := time.Now()
			for time.Since(start) < duration {
				ok, err := rdb.SetNX(ctx, "rawlock", "me", 2*time.Second).Result()
				if err != nil {
					return fail(exitHarness, fmt.Errorf("SET NX: %w", err))
				}
				if ok && st != nil {
					req := fmt.Sprintf("raw-%d", cycles)
					v, err := st.Read(ctx, store.Request{Req: req + "r", Client: "raw", Key: "x"})
					if err != nil {
						return fail(exitHarness, fmt.Errorf("store read: %w", err))
					}
					if err := st.Write(ctx, store.Request{Req: req + "w", Client: "raw", Key: "x", Value: v.Value + 1}); err != nil {
						return fail(exitHarness, fmt.Errorf("store write: %w", err))
					}
				}
				if ok {
					if err := del.Run(ctx, rdb, []string{"rawlock"}, "me").Err(); err != nil {
						return fail(exitHarness, fmt.Errorf("compare-and-delete: %w", err))
					}
					cycles++
				}
			}
			fmt.Printf("%.1f\n", float64(cycles)/time.Since(start).Seconds())
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "redis:6379", "Redis address")
	cmd.Flags().DurationVar(&duration, "duration", 5*time.Second, "how long to loop")
	cmd.Flags().StringVar(&storeAddr, "store", "", "the store's address: read and write it inside each cycle")
	return cmd
}
