package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/queuehq/queue/app"
)

// Runtime settings (issue 26): queue settings and periodic entries changed
// through the Service, stored, audited in the same transaction, reloaded.

func init() {
	extraCases["SettingsSetUnsetResetReload"] = testSettingsSetUnsetResetReload
	extraCases["SettingsRuntimeZeroOverridesFile"] = testSettingsRuntimeZeroOverridesFile
	extraCases["SettingsInvalidChangesNothing"] = testSettingsInvalidChangesNothing
	extraCases["SettingsConcurrencyOnNextClaim"] = testSettingsConcurrencyOnNextClaim
	extraCases["SettingsKeyLimitReleasesHeld"] = testSettingsKeyLimitReleasesHeld
	extraCases["SettingsRetentionAppliesToSweep"] = testSettingsRetentionAppliesToSweep
	extraCases["PeriodicCreateUpdateDeletePause"] = testPeriodicCreateUpdateDeletePause
	extraCases["PeriodicSchedulerFollowsChanges"] = testPeriodicSchedulerFollowsChanges
	extraCases["FaultInsideSettingsWriteChangesNothing"] = testFaultInsideSettingsWriteChangesNothing
	faultCases = append(faultCases,
		faultCase{"queue settings", app.FaultSettingsWrite, 0, func(e *env) func() error {
			svc := e.settingsService(nil)
			return func() error {
				_, err := svc.PatchQueueSettings(e.ctx, "q", raw(`{"concurrency": 3}`), "tester")
				return err
			}
		}},
		faultCase{"periodic entry made through the API", app.FaultSettingsWrite, 0, func(e *env) func() error {
			svc := e.settingsService(nil)
			return func() error {
				_, err := svc.CreatePeriodic(e.ctx, app.PeriodicInput{Name: "tick", Cron: "@every 1s", Kind: "k"}, "tester")
				return err
			}
		}},
	)
}

// everyParser is a ScheduleParser for "@every D" alone (app's tests do not
// import robfig/cron; package commands injects the real one).
func everyParser(spec string, _ *time.Location) (app.Schedule, error) {
	d, ok := strings.CutPrefix(spec, "@every ")
	if !ok {
		return nil, fmt.Errorf("only @every D here")
	}
	v, err := time.ParseDuration(d)
	if err != nil || v < time.Second {
		return nil, fmt.Errorf("bad duration %q", d)
	}
	return every(v), nil
}

// every fires on whole multiples of itself, as robfig/cron's @every does
// on whole seconds.
type every time.Duration

func (d every) Next(t time.Time) time.Time { return t.Truncate(time.Duration(d)).Add(time.Duration(d)) }

// settingsService is a Service over e's store with cfg (nil: defaults)
// and the test parser, its runtime settings loaded.
func (e *env) settingsService(cfg *app.Config) *app.Service {
	e.t.Helper()
	if cfg == nil {
		cfg = app.DefaultConfig()
	}
	cfg.ParseSchedule = everyParser
	svc := e.service(cfg)
	if err := svc.ReloadSettings(e.ctx); err != nil {
		e.t.Fatalf("ReloadSettings: %v", err)
	}
	return svc
}

func raw(s string) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		panic(err)
	}
	return m
}

func (e *env) audit() []app.AuditEntry {
	e.t.Helper()
	a, err := e.s.ListAudit(e.ctx, app.AuditFilter{Limit: 1000})
	if err != nil {
		e.t.Fatal(err)
	}
	return a
}

func testSettingsSetUnsetResetReload(e *env) {
	cfg := app.DefaultConfig()
	cfg.Queues["q"] = app.QueueConfig{Concurrency: 5, Retention: app.Duration(time.Hour)}
	cfg.Defaults = app.QueueConfig{MaxAttempts: 7}
	svc := e.settingsService(cfg)
	v, err := svc.PatchQueueSettings(e.ctx, "q", raw(`{"concurrency": 3, "retention": "48h", "key_rate": "10/1m"}`), "tester")
	if err != nil {
		e.t.Fatalf("PatchQueueSettings: %v", err)
	}
	if v.Effective.Concurrency != 3 || v.Effective.Retention.D() != 48*time.Hour || v.Effective.KeyRate != (app.KeyRate{N: 10, Per: time.Minute}) ||
		v.Effective.MaxAttempts != 7 {
		e.t.Fatalf("effective after the patch: %+v", v.Effective)
	}
	if v.Sources["concurrency"] != app.SourceRuntime || v.Sources["max_attempts"] != app.SourceFileDefaults ||
		v.Sources["timeout"] != app.SourceBuiltin || v.File["concurrency"] != 5 {
		e.t.Fatalf("sources %v, file %v", v.Sources, v.File)
	}
	if len(v.Runtime) != 3 || v.UpdatedBy == nil || *v.UpdatedBy != "tester" || v.UpdatedAt == nil || !v.UpdatedAt.Equal(T0) {
		e.t.Fatalf("runtime %v, updated %v by %v", v.Runtime, v.UpdatedAt, v.UpdatedBy)
	}
	if got := svc.Config.Queue("q").Concurrency; got != 3 {
		e.t.Fatalf("Config.Queue after the patch: concurrency %d, want 3 (in effect at once)", got)
	}
	a := e.audit()
	if len(a) != 1 || a[0].Action != "queue.settings" || a[0].Target != "queue q" || a[0].Actor != "tester" ||
		!strings.Contains(string(a[0].Filter), `"concurrency":3`) || !strings.Contains(string(a[0].Filter), `"retention":"2d"`) {
		e.t.Fatalf("audit after the patch: %+v (filter %s)", a, a[0].Filter)
	}

	// Another node (or a restart) over the same store: the same policy.
	cfg2 := app.DefaultConfig()
	cfg2.Queues["q"] = app.QueueConfig{Concurrency: 5, Retention: app.Duration(time.Hour)}
	other := e.settingsService(cfg2)
	if got := other.Config.Queue("q"); got.Concurrency != 3 || got.Retention.D() != 48*time.Hour {
		e.t.Fatalf("after a reload elsewhere: %+v", got)
	}

	// null unsets one field: the file's value applies again.
	if v, err = svc.PatchQueueSettings(e.ctx, "q", raw(`{"concurrency": null}`), "tester"); err != nil {
		e.t.Fatal(err)
	}
	if v.Effective.Concurrency != 5 || v.Sources["concurrency"] != app.SourceFile || v.Effective.Retention.D() != 48*time.Hour {
		e.t.Fatalf("after unsetting concurrency: %+v %v", v.Effective, v.Sources)
	}
	// A reload that reads what the last did keeps the settings it has.
	before := svc.Config.Settings()
	if err := svc.ReloadSettings(e.ctx); err != nil || svc.Config.Settings() != before {
		e.t.Fatalf("a reload with nothing changed made new settings (%v)", err)
	}
	if err := other.ReloadSettings(e.ctx); err != nil || other.Config.Queue("q").Concurrency != 5 {
		e.t.Fatalf("the other node after a reload: concurrency %d (%v), want 5", other.Config.Queue("q").Concurrency, err)
	}

	// Reset unsets them all.
	if v, err = svc.ResetQueueSettings(e.ctx, "q", "tester"); err != nil {
		e.t.Fatal(err)
	}
	if len(v.Runtime) != 0 || v.UpdatedAt != nil || v.Effective.Retention.D() != time.Hour || v.Effective.KeyRate.N != 0 {
		e.t.Fatalf("after reset: %+v", v)
	}
	recs, err := e.s.Settings(e.ctx)
	if err != nil || len(recs) != 0 {
		e.t.Fatalf("stored settings after reset: %+v %v", recs, err)
	}
	if a := e.audit(); len(a) != 3 || a[0].Action != "queue.settings.reset" {
		e.t.Fatalf("audit after reset: %+v", a)
	}
	if other.ReloadSettings(e.ctx); other.Config.Queue("q").Retention.D() != time.Hour {
		e.t.Fatalf("the other node after reset: %+v", other.Config.Queue("q"))
	}
}

// A runtime 0 of concurrency, rate or max_queued means no limit, over a
// file's limit; a queue set only at runtime is one of Config's queues.
func testSettingsRuntimeZeroOverridesFile(e *env) {
	cfg := app.DefaultConfig()
	cfg.Queues["q"] = app.QueueConfig{Concurrency: 2, Rate: 5, MaxQueued: 10}
	svc := e.settingsService(cfg)
	if _, err := svc.PatchQueueSettings(e.ctx, "q", raw(`{"concurrency": 0, "rate": 0, "max_queued": 0}`), "t"); err != nil {
		e.t.Fatal(err)
	}
	if q := svc.Config.Queue("q"); q.Concurrency != 0 || q.Rate != 0 || q.MaxQueued != 0 {
		e.t.Fatalf("runtime zeros: %+v, want no limits", q)
	}
	if m := svc.Config.MaxQueued(); len(m) != 0 {
		e.t.Fatalf("MaxQueued with a runtime 0: %v", m)
	}
	if _, err := svc.PatchQueueSettings(e.ctx, "new", raw(`{"max_queued": 1}`), "t"); err != nil {
		e.t.Fatal(err)
	}
	if m := svc.Config.MaxQueued(); m["new"] != 1 {
		e.t.Fatalf("MaxQueued misses a queue set only at runtime: %v", m)
	}
	if names := svc.Config.QueueNames(); len(names) != 2 || names[0] != "new" || names[1] != "q" {
		e.t.Fatalf("QueueNames: %v", names)
	}
	if _, err := svc.Submit(e.ctx, []app.SubmitInput{{Queue: "new", Kind: "k"}}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := svc.Submit(e.ctx, []app.SubmitInput{{Queue: "new", Kind: "k"}}); !errors.Is(err, app.ErrQueueFull) {
		e.t.Fatalf("a second job over a runtime max_queued of 1: %v, want ErrQueueFull", err)
	}
}

func testSettingsInvalidChangesNothing(e *env) {
	cfg := app.DefaultConfig()
	cfg.Queues["q"] = app.QueueConfig{BackoffMax: app.Duration(10 * time.Second)}
	svc := e.settingsService(cfg)
	for body, field := range map[string]string{
		`{"concurrency": -1}`:               "concurrency",
		`{"concurrency": "3"}`:              "concurrency",
		`{"max_attempts": 0}`:               "max_attempts",
		`{"max_attempts": 1001}`:            "max_attempts",
		`{"timeout": "soon"}`:               "timeout",
		`{"backoff_base": "1m"}`:            "backoff_base", // over the file's backoff_max
		`{"key_rate": "1.5/1s"}`:            "key_rate",
		`{"fairness": "random"}`:            "fairness",
		`{"log_kib": 5000}`:                 "log_kib",
		`{"colour": 1}`:                     "colour",
		`{"rate": 2, "concurrency": -1}`:    "concurrency",
		`{}`:                                "settings",
		`{"retention": "0s"}`:               "retention",
		`{"dlq_retention": "-1h"}`:          "dlq_retention",
		`{"burst": -2}`:                     "burst",
		`{"key_concurrency": 1.5}`:          "key_concurrency",
		`{"max_queued": 10, "timeout": 3}`:  "",
		`{"max_queued": null, "rate": "x"}`: "rate",
	} {
		_, err := svc.PatchQueueSettings(e.ctx, "q", raw(body), "t")
		if field == "" {
			if err != nil {
				e.t.Fatalf("%s: %v", body, err)
			}
			svc.ResetQueueSettings(e.ctx, "q", "t")
			continue
		}
		var ie *app.InvalidError
		if !errors.As(err, &ie) || ie.Field != field {
			e.t.Errorf("%s: err %v, want an InvalidError of field %s", body, err, field)
		}
	}
	if _, err := svc.PatchQueueSettings(e.ctx, "bad queue!", raw(`{"rate": 1}`), "t"); err == nil {
		e.t.Errorf("a bad queue name was taken")
	}
	recs, _ := e.s.Settings(e.ctx)
	if len(recs) != 0 {
		e.t.Fatalf("invalid settings were stored: %+v", recs)
	}
	for _, a := range e.audit() {
		if a.Action == "queue.settings" && !strings.Contains(string(a.Filter), "max_queued") {
			e.t.Fatalf("an invalid change was audited: %+v", a)
		}
	}
}

// A queue's concurrency changed at runtime limits the very next claim.
func testSettingsConcurrencyOnNextClaim(e *env) {
	svc := e.settingsService(nil)
	for range 4 {
		e.submitOne("lim", "k")
	}
	if _, err := svc.PatchQueueSettings(e.ctx, "lim", raw(`{"concurrency": 1}`), "t"); err != nil {
		e.t.Fatal(err)
	}
	jobs, err := svc.Claim(e.ctx, "lim", app.ClaimInput{Limit: 3})
	if err != nil || len(jobs) != 1 {
		e.t.Fatalf("claim under a runtime concurrency of 1: %d jobs (%v), want 1", len(jobs), err)
	}
	if _, err := svc.PatchQueueSettings(e.ctx, "lim", raw(`{"concurrency": 3}`), "t"); err != nil {
		e.t.Fatal(err)
	}
	if jobs, err = svc.Claim(e.ctx, "lim", app.ClaimInput{Limit: 3}); err != nil || len(jobs) != 2 {
		e.t.Fatalf("claim after raising it to 3: %d jobs (%v), want 2", len(jobs), err)
	}
}

// Raising a key limit at runtime releases the held jobs it makes room for
// (the Service sweeps the keys after the change).
func testSettingsKeyLimitReleasesHeld(e *env) {
	svc := e.settingsService(nil)
	e.setLimits("kq", app.KeyLimits{Concurrency: 1}) // the store's view, as serve wires it (Config.KeyLimits)
	e.submitN(3, "kq", "k", keyed("A"))
	if n, _ := e.s.CountJobs(e.ctx, app.JobFilter{Queue: "kq", Status: "queued"}); n != 3 {
		e.t.Fatalf("%d queued", n)
	}
	held := func() int {
		h, err := e.s.HeldCounts(e.ctx)
		if err != nil {
			e.t.Fatal(err)
		}
		return h["kq"]
	}
	if held() != 2 {
		e.t.Fatalf("held before: %d, want 2", held())
	}
	e.setLimits("kq", app.KeyLimits{Concurrency: 3})
	if _, err := svc.PatchQueueSettings(e.ctx, "kq", raw(`{"key_concurrency": 3}`), "t"); err != nil {
		e.t.Fatal(err)
	}
	if held() != 0 {
		e.t.Fatalf("held after raising key_concurrency at runtime: %d, want 0", held())
	}
}

func testPeriodicCreateUpdateDeletePause(e *env) {
	cfg := app.DefaultConfig()
	cfg.Periodic = []app.PeriodicConfig{{Name: "nightly", Cron: "@every 1h", Queue: "cron", Kind: "report", CatchUp: "one", Schedule: every(time.Hour), PayloadJSON: []byte(`{}`)}}
	svc := e.settingsService(cfg)
	st, err := svc.CreatePeriodic(e.ctx, app.PeriodicInput{Name: "tick", Cron: "@every 2s", Queue: "cron", Kind: "tick",
		Payload: json.RawMessage(`{"n": 12345678901234567}`), Tags: []string{"t1"}}, "tester")
	if err != nil {
		e.t.Fatalf("CreatePeriodic: %v", err)
	}
	if st.Source != app.PeriodicFromAPI || st.Paused || st.NextFire == nil || st.CatchUp != "one" || st.UpdatedBy != "tester" {
		e.t.Fatalf("created: %+v", st)
	}
	list, err := svc.PeriodicStatus(e.ctx)
	if err != nil || len(list) != 2 || list[0].Name != "nightly" || list[0].Source != app.PeriodicFromFile || list[1].Name != "tick" {
		e.t.Fatalf("PeriodicStatus: %+v %v", list, err)
	}
	for _, c := range []struct {
		what string
		err  error
		want error
	}{
		{"create again", second(svc.CreatePeriodic(e.ctx, app.PeriodicInput{Name: "tick", Cron: "@every 1s", Kind: "k"}, "t")), app.ErrPeriodicExists},
		{"create a file's name", second(svc.CreatePeriodic(e.ctx, app.PeriodicInput{Name: "nightly", Cron: "@every 1s", Kind: "k"}, "t")), app.ErrPeriodicInConfig},
		{"update a file's entry", second(svc.UpdatePeriodic(e.ctx, "nightly", app.PeriodicInput{Cron: "@every 1s", Kind: "k"}, "t")), app.ErrPeriodicInConfig},
		{"delete a file's entry", svc.DeletePeriodic(e.ctx, "nightly", "t"), app.ErrPeriodicInConfig},
		{"update an unknown entry", second(svc.UpdatePeriodic(e.ctx, "nope", app.PeriodicInput{Cron: "@every 1s", Kind: "k"}, "t")), app.ErrNotFound},
		{"pause an unknown entry", second(svc.SetPeriodicPaused(e.ctx, "nope", true, "t")), app.ErrNotFound},
		{"run an unknown entry", second(svc.RunPeriodic(e.ctx, "nope", "t")), app.ErrNotFound},
	} {
		if !errors.Is(c.err, c.want) {
			e.t.Errorf("%s: %v, want %v", c.what, c.err, c.want)
		}
	}
	for in, field := range map[*app.PeriodicInput]string{
		{Cron: "@every 1s", Kind: "k"}:                                 "name",
		{Name: "a b", Cron: "@every 1s", Kind: "k"}:                    "name",
		{Name: "x", Cron: "every minute", Kind: "k"}:                   "cron",
		{Name: "x", Cron: "@every 1s", Kind: "k", Timezone: "Mars/Up"}: "timezone",
		{Name: "x", Cron: "@every 1s"}:                                 "kind",
		{Name: "x", Cron: "@every 1s", Kind: "k", CatchUp: "all"}:      "catch_up",
		{Name: "x", Cron: "@every 1s", Kind: "k", Priority: 5000}:      "priority",
		{Name: "x", Cron: "@every 1s", Kind: "k", Queue: "a b"}:        "queue",
	} {
		_, err := svc.CreatePeriodic(e.ctx, *in, "t")
		var ie *app.InvalidError
		if !errors.As(err, &ie) || ie.Field != field {
			e.t.Errorf("create %+v: %v, want an InvalidError of %s", *in, err, field)
		}
	}
	if st, err = svc.UpdatePeriodic(e.ctx, "tick", app.PeriodicInput{Cron: "@every 5s", Queue: "cron2", Kind: "tock"}, "tester"); err != nil {
		e.t.Fatal(err)
	}
	if st.Cron != "@every 5s" || st.Queue != "cron2" || st.Kind != "tock" {
		e.t.Fatalf("updated: %+v", st)
	}
	for _, name := range []string{"tick", "nightly"} {
		if st, err = svc.SetPeriodicPaused(e.ctx, name, true, "tester"); err != nil || !st.Paused || st.NextFire != nil || st.PausedAt == nil {
			e.t.Fatalf("pause %s: %+v %v", name, st, err)
		}
	}
	// The paused state is stored: a restart (a new Service) keeps it.
	svc2 := e.settingsService(cfg)
	if list, _ = svc2.PeriodicStatus(e.ctx); !list[0].Paused || !list[1].Paused {
		e.t.Fatalf("paused state after a reload: %+v", list)
	}
	job, err := svc.RunPeriodic(e.ctx, "tick", "tester")
	if err != nil || job.Queue != "cron2" || job.Kind != "tock" {
		e.t.Fatalf("run now of a paused entry: %+v %v", job, err)
	}
	if st, err = svc.SetPeriodicPaused(e.ctx, "nightly", false, "tester"); err != nil || st.Paused || st.NextFire == nil {
		e.t.Fatalf("resume: %+v %v", st, err)
	}
	if err := svc.DeletePeriodic(e.ctx, "tick", "tester"); err != nil {
		e.t.Fatal(err)
	}
	if _, err := svc.GetPeriodic(e.ctx, "tick"); !errors.Is(err, app.ErrNotFound) {
		e.t.Fatalf("get after delete: %v", err)
	}
	recs, _ := e.s.Settings(e.ctx)
	if len(recs) != 1 || recs[0].Kind != app.SettingPeriodicState || recs[0].Name != "nightly" {
		e.t.Fatalf("stored after deleting tick (its state with it): %+v", recs)
	}
	var actions []string
	for _, a := range e.audit() {
		actions = append([]string{a.Action}, actions...)
	}
	want := "periodic.create periodic.update periodic.pause periodic.pause periodic.run periodic.resume periodic.delete"
	if got := strings.Join(actions, " "); got != want {
		e.t.Fatalf("audit: %s, want %s", got, want)
	}
}

func second[T any](_ T, err error) error { return err }

// The Scheduler fires an entry made through the API, stops while it is
// paused (and does not catch up on resume), and forgets a deleted one.
func testPeriodicSchedulerFollowsChanges(e *env) {
	svc := e.settingsService(nil)
	p := &app.Scheduler{Service: svc}
	if err := p.Start(e.ctx); err != nil {
		e.t.Fatal(err)
	}
	count := func() int {
		n, _ := e.s.CountJobs(e.ctx, app.JobFilter{Queue: "cron"})
		return n
	}
	tick := func(n int) {
		for range n {
			e.clock.Advance(time.Second)
			if _, err := p.Due(e.ctx); err != nil {
				e.t.Fatal(err)
			}
		}
	}
	if _, err := svc.CreatePeriodic(e.ctx, app.PeriodicInput{Name: "tick", Cron: "@every 1s", Queue: "cron", Kind: "tick"}, "t"); err != nil {
		e.t.Fatal(err)
	}
	p.Due(e.ctx) // sees the entry: its next fire is a second from now
	tick(3)
	if count() != 3 {
		e.t.Fatalf("after 3 seconds: %d jobs, want 3", count())
	}
	// Paused on another node: this one has not reloaded, and still fires nothing.
	other := e.settingsService(nil)
	if _, err := other.SetPeriodicPaused(e.ctx, "tick", true, "t"); err != nil {
		e.t.Fatal(err)
	}
	tick(1)
	if count() != 3 {
		e.t.Fatalf("a fire after a pause on another node: %d jobs", count())
	}
	svc.ReloadSettings(e.ctx)
	tick(5)
	if count() != 3 {
		e.t.Fatalf("paused for 5 seconds: %d jobs, want 3", count())
	}
	if _, err := svc.SetPeriodicPaused(e.ctx, "tick", false, "t"); err != nil {
		e.t.Fatal(err)
	}
	p.Due(e.ctx)
	if count() != 3 {
		e.t.Fatalf("resume caught up fires missed while paused: %d jobs", count())
	}
	tick(2)
	if count() != 5 {
		e.t.Fatalf("2 seconds after resume: %d jobs, want 5", count())
	}
	// A restart after a pause does not catch up what was missed while paused.
	svc.SetPeriodicPaused(e.ctx, "tick", true, "t")
	e.clock.Advance(10 * time.Second)
	svc.SetPeriodicPaused(e.ctx, "tick", false, "t")
	p2 := &app.Scheduler{Service: svc}
	if err := p2.Start(e.ctx); err != nil || count() != 5 {
		e.t.Fatalf("a restart caught up fires missed while paused: %d jobs (%v)", count(), err)
	}
	// Deleted: no more fires.
	if err := svc.DeletePeriodic(e.ctx, "tick", "t"); err != nil {
		e.t.Fatal(err)
	}
	tick(3)
	if count() != 5 {
		e.t.Fatalf("fires after delete: %d jobs", count())
	}
}

func testFaultInsideSettingsWriteChangesNothing(e *env) {
	svc := e.settingsService(nil)
	if _, err := svc.PatchQueueSettings(e.ctx, "q", raw(`{"rate": 2}`), "t"); err != nil {
		e.t.Fatal(err)
	}
	before, _ := e.s.Settings(e.ctx)
	audit := len(e.audit())
	e.setFault(func(ctx context.Context, p app.FaultPoint, id int64) error {
		if p == app.FaultSettingsWrite {
			return errInjected
		}
		return nil
	})
	writes := map[string]func() error{
		"patch": func() error { return second(svc.PatchQueueSettings(e.ctx, "q", raw(`{"rate": 9}`), "t")) },
		"reset": func() error { return second(svc.ResetQueueSettings(e.ctx, "q", "t")) },
		"create": func() error {
			return second(svc.CreatePeriodic(e.ctx, app.PeriodicInput{Name: "p", Cron: "@every 1s", Kind: "k"}, "t"))
		},
	}
	for what, w := range writes {
		if err := w(); !errors.Is(err, errInjected) {
			e.t.Fatalf("%s with a fault: %v", what, err)
		}
	}
	after, _ := e.s.Settings(e.ctx)
	if len(after) != len(before) || string(after[0].Value) != string(before[0].Value) || len(e.audit()) != audit {
		e.t.Fatalf("a fault changed the settings or the audit: %+v -> %+v", before, after)
	}
	if svc.Config.Queue("q").Rate != 2 {
		e.t.Fatalf("a failed change took effect: rate %v", svc.Config.Queue("q").Rate)
	}
}

// A retention set at runtime for a queue the config file does not name is
// the one the retention pass applies; a settings.changed event tells.
func testSettingsRetentionAppliesToSweep(e *env) {
	svc := e.settingsService(nil)
	sub := e.bus.Subscribe(16, func(ev *app.Event) bool { return ev.Type == app.EventSettingsChanged })
	defer sub.Close()
	if _, err := svc.PatchQueueSettings(e.ctx, "short", raw(`{"retention": "1h"}`), "t"); err != nil {
		e.t.Fatal(err)
	}
	select {
	case ev := <-sub.C:
		if ev.Queue != "short" || !strings.Contains(string(ev.Data), `"retention"`) {
			e.t.Fatalf("settings.changed: %+v %s", ev, ev.Data)
		}
	case <-time.After(5 * time.Second):
		e.t.Fatal("no settings.changed event")
	}
	for _, q := range []string{"short", "other"} {
		e.submitOne(q, "k")
		j := e.claimOne(q)
		if errs, err := e.s.Complete(e.ctx, []app.Completion{{ID: j.ID, Lease: j.Lease}}); err != nil || errs[0] != nil {
			e.t.Fatalf("complete: %v %v", err, errs)
		}
	}
	e.clock.Advance(2 * time.Hour)
	if _, err := (&app.Maintainer{Service: svc}).Sweep(e.ctx); err != nil {
		e.t.Fatal(err)
	}
	for q, want := range map[string]int{"short": 0, "other": 1} {
		if n, _ := e.s.CountJobs(e.ctx, app.JobFilter{Queue: q}); n != want {
			e.t.Errorf("queue %s after 2h and a sweep: %d jobs, want %d (runtime retention 1h on short only)", q, n, want)
		}
	}
}
