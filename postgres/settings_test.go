package postgres

import (
	"context"
	"encoding/json"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
)

// settingsNode is one `queue serve` over a store, wired as serve wires it:
// its Service with the settings loaded, reloaded every second, and the
// scheduler run by the node that leads.
type settingsNode struct {
	store *Store
	svc   *app.Service
}

func startSettingsNodes(t *testing.T) (a, b *settingsNode) {
	return startSettingsNodesWith(t, true)
}

// startSettingsNodesWith is startSettingsNodes; without reloadA node A
// never reloads its settings (it sees only its own changes), and it leads.
func startSettingsNodesWith(t *testing.T, reloadA bool) (a, b *settingsNode) {
	sa, sb := twoNodes(t, app.StoreOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() }) // before the stores close
	start := func(s *Store, name string) *settingsNode {
		log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel).With().Str("node", name).Logger()
		cfg := app.DefaultConfig()
		cfg.ParseSchedule = func(spec string, loc *time.Location) (app.Schedule, error) { return cron.ParseStandard(spec) }
		svc := app.NewService(s, cfg, nil, nil, log)
		if err := svc.ReloadSettings(ctx); err != nil {
			t.Fatal(err)
		}
		sched := &app.Scheduler{Service: svc}
		if err := sched.Start(ctx); err != nil {
			t.Fatal(err)
		}
		leading := make(chan struct{})
		wg.Add(1)
		if name == "b" || reloadA {
			wg.Add(1)
			go func() { defer wg.Done(); svc.RunSettingsReload(ctx, app.SettingsReloadEvery) }()
		}
		go func() {
			defer wg.Done()
			s.Lead(ctx, log, func(ctx context.Context) { close(leading); sched.Run(ctx) })
		}()
		if name == "a" && !reloadA {
			select {
			case <-leading:
			case <-time.After(10 * time.Second):
				t.Fatal("node A does not lead")
			}
		}
		return &settingsNode{store: s, svc: svc}
	}
	return start(sa, "a"), start(sb, "b")
}

// waitFor polls cond until it holds or within passes, and says how long it took.
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > within {
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(start)
}

// A queue setting changed on node A is in effect on node B within a
// second: B's next claim obeys it.
func TestSettingsReachEveryNodeWithinASecond(t *testing.T) {
	a, b := startSettingsNodes(t)
	ctx := t.Context()
	submit(t, a.store, newJob("lim"), newJob("lim"), newJob("lim"), newJob("lim"))
	for i, want := range []int{1, 3} {
		patch := map[string]json.RawMessage{"concurrency": json.RawMessage(`1`)}
		if want == 3 {
			patch["concurrency"] = json.RawMessage(`3`)
		}
		if _, err := a.svc.PatchQueueSettings(ctx, "lim", patch, "tester"); err != nil {
			t.Fatal(err)
		}
		took := waitFor(t, 3*time.Second, "node B sees the change", func() bool { return b.svc.Config.Queue("lim").Concurrency == want })
		if took > 1100*time.Millisecond {
			t.Errorf("change %d: node B saw it after %v, want within a second", i, took)
		}
	}
	if _, err := a.svc.PatchQueueSettings(ctx, "lim", map[string]json.RawMessage{"concurrency": json.RawMessage(`1`)}, "tester"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Second, "node B sees concurrency 1", func() bool { return b.svc.Config.Queue("lim").Concurrency == 1 })
	jobs, err := b.svc.Claim(ctx, "lim", app.ClaimInput{Limit: 3})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("node B's claim under concurrency 1 set on node A: %d jobs (%v), want 1", len(jobs), err)
	}
	if _, err := a.svc.ResetQueueSettings(ctx, "lim", "tester"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Second, "node B sees the reset", func() bool { return b.svc.Config.Queue("lim").Concurrency == 0 })
	if jobs, err = b.svc.Claim(ctx, "lim", app.ClaimInput{Limit: 3}); err != nil || len(jobs) != 3 {
		t.Fatalf("node B's claim after the reset: %d jobs (%v), want 3", len(jobs), err)
	}
}

// A periodic job made on node A fires once per fire time with both nodes
// running; a pause on node B stops it at once; run now on node A enqueues
// one job at once.
func TestPeriodicAcrossTwoNodes(t *testing.T) {
	a, b := startSettingsNodes(t)
	ctx := t.Context()
	db := adminConn(t, a.store)
	schema := a.store.Schema()
	counts := func() (jobs, fires, distinct int) {
		t.Helper()
		if err := db.QueryRow(ctx, `SELECT (SELECT count(*) FROM `+schema+`.jobs WHERE queue = 'cron'),
			count(*), count(DISTINCT fire_at) FROM `+schema+`.periodic_fires WHERE entry = 'tick'`).Scan(&jobs, &fires, &distinct); err != nil {
			t.Fatal(err)
		}
		return
	}
	created := time.Now()
	if _, err := a.svc.CreatePeriodic(ctx, app.PeriodicInput{Name: "tick", Cron: "@every 1s", Queue: "cron", Kind: "tick"}, "tester"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Second, "node B knows the entry", func() bool { _, ok := b.svc.Config.PeriodicEntry("tick"); return ok })
	time.Sleep(4500 * time.Millisecond) // several fire times
	jobs, fires, distinct := counts()
	elapsed := time.Since(created).Seconds()
	// "@every 1s" fires on whole seconds (robfig/cron rounds its delay
	// down), so the first fire may come just after creation: at most one
	// per whole second elapsed, plus that one.
	if jobs != fires || fires != distinct || float64(jobs) < elapsed-2.5 || float64(jobs) > math.Floor(elapsed)+1 {
		t.Fatalf("after %.1fs of @every 1s on two nodes: %d jobs, %d fires (%d fire times); want one job per fire time, about one a second",
			elapsed, jobs, fires, distinct)
	}
	// Pause on B: nothing fires from the moment it commits, whichever node leads.
	if _, err := b.svc.SetPeriodicPaused(ctx, "tick", true, "tester"); err != nil {
		t.Fatal(err)
	}
	paused, _, _ := counts()
	time.Sleep(2500 * time.Millisecond)
	if now, _, _ := counts(); now != paused {
		t.Fatalf("a paused entry fired: %d jobs at the pause, %d 2.5s later", paused, now)
	}
	// Run now on A: one job at once, paused or not.
	job, err := a.svc.RunPeriodic(ctx, "tick", "tester")
	if err != nil || job.Queue != "cron" || job.Kind != "tick" {
		t.Fatalf("run now: %+v %v", job, err)
	}
	if now, _, _ := counts(); now != paused+1 {
		t.Fatalf("run now: %d jobs, want %d", now, paused+1)
	}
	// Resume on B: fires again, about one a second from now.
	if _, err := b.svc.SetPeriodicPaused(ctx, "tick", false, "tester"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Second, "a fire after resume", func() bool { n, _, _ := counts(); return n > paused+1 })
	if j, f, d := counts(); j != f || f != d {
		t.Fatalf("after resume: %d jobs, %d fires, %d fire times", j, f, d)
	}
	audit, err := a.store.ListAudit(ctx, app.AuditFilter{Limit: 10})
	if err != nil || len(audit) != 4 || audit[0].Action != "periodic.resume" || audit[3].Action != "periodic.create" {
		t.Fatalf("audit: %+v %v", audit, err)
	}
}

// A pause on node B stops the fires of the leading node A at once, even
// before A reloads its settings (here it never does): each fire reads the
// entry's stored state in its own transaction.
func TestPeriodicPauseHoldsBeforeReload(t *testing.T) {
	a, b := startSettingsNodesWith(t, false)
	ctx := t.Context()
	count := func() int {
		n, err := a.store.CountJobs(ctx, app.JobFilter{Queue: "cron"})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if _, err := a.svc.CreatePeriodic(ctx, app.PeriodicInput{Name: "tick", Cron: "@every 1s", Queue: "cron", Kind: "tick"}, "tester"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "two fires on node A", func() bool { return count() >= 2 })
	if err := b.svc.ReloadSettings(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.svc.SetPeriodicPaused(ctx, "tick", true, "tester"); err != nil {
		t.Fatal(err)
	}
	paused := count()
	time.Sleep(3 * time.Second)
	if now := count(); now != paused {
		t.Fatalf("node A fired a paused entry it had not reloaded: %d jobs at the pause, %d 3s later", paused, now)
	}
	if _, err := b.svc.SetPeriodicPaused(ctx, "tick", false, "tester"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Second, "a fire after resume", func() bool { return count() > paused })
	if err := b.svc.DeletePeriodic(ctx, "tick", "tester"); err != nil {
		t.Fatal(err)
	}
	deleted := count()
	time.Sleep(2500 * time.Millisecond)
	if now := count(); now != deleted {
		t.Fatalf("node A fired an entry deleted on node B: %d jobs at the delete, %d later", deleted, now)
	}
}
