package storetest

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/queuehq/queue/app"
)

// The worker registry (issue 26, app/workers.go) on every store.
func init() {
	extraCases["WorkerRegistryRegistersBeatsAndCommands"] = testWorkerRegistry
	extraCases["WorkerRegistryRefusesBadInput"] = testWorkerRegistryRefusesBadInput
	extraCases["WorkerRegistryPruneIsBounded"] = testWorkerRegistryPruneIsBounded
	extraCases["WorkerQuietOrStoppedClaimsNothing"] = testWorkerQuietOrStoppedClaimsNothing
	extraCases["WorkerReadByIDBeyondTheList"] = testWorkerReadByIDBeyondTheList
	extraCases["WorkerPIDAndCountBounds"] = testWorkerPIDAndCountBounds
	extraCases["WorkersListedInByteOrder"] = testWorkersListedInByteOrder
}

func workerInput(id string, mods ...func(*app.WorkerInput)) app.WorkerInput {
	in := app.WorkerInput{ID: id, Host: "box-1", PID: 4242, Version: "v1.2.3",
		Queues: &app.QueueChoice{Names: []string{"critical", "default"}, Weights: []int{6, 3}},
		Kinds:  []string{"email.send", "report"}, Concurrency: 4, Type: app.WorkerHTTP}
	for _, m := range mods {
		m(&in)
	}
	return in
}

func (e *env) worker(svc *app.Service, id string) *app.Worker {
	e.t.Helper()
	w, err := svc.Worker(e.ctx, id)
	if err != nil {
		e.t.Fatalf("Worker(%q): %v", id, err)
	}
	return w
}

func testWorkerRegistry(e *env) {
	svc := e.service(nil)
	sub := e.bus.Subscribe(100, func(ev *app.Event) bool { return ev.Type == app.EventWorkerChanged })
	defer sub.Close()

	reg, err := svc.RegisterWorker(e.ctx, workerInput("box-1:4242-a"))
	if err != nil {
		e.t.Fatalf("RegisterWorker: %v", err)
	}
	if reg.ID != "box-1:4242-a" || reg.Command != app.WorkerRun || reg.HeartbeatInterval.D() != 5*time.Second {
		e.t.Fatalf("RegisterWorker = %+v, want id box-1:4242-a, command run, heartbeat 5s", reg)
	}
	w := e.worker(svc, reg.ID)
	want := app.Worker{ID: "box-1:4242-a", Host: "box-1", PID: 4242, Version: "v1.2.3",
		Queues: app.QueueChoice{Names: []string{"critical", "default"}, Weights: []int{6, 3}},
		Kinds:  []string{"email.send", "report"}, Concurrency: 4, Type: app.WorkerHTTP, Command: app.WorkerRun,
		StartedAt: T0, LastSeenAt: T0, State: app.WorkerRunning}
	if !reflect.DeepEqual(*w, want) {
		e.t.Fatalf("Worker as stored:\n got %+v\nwant %+v", *w, want)
	}

	// A server-made id, without weights or kinds.
	reg2, err := svc.RegisterWorker(e.ctx, workerInput("", func(in *app.WorkerInput) {
		in.Queues, in.Kinds, in.Type = &app.QueueChoice{Names: []string{"default"}}, nil, app.WorkerGo
	}))
	if err != nil || reg2.ID == "" {
		e.t.Fatalf("RegisterWorker without id = %+v, %v", reg2, err)
	}
	if w2 := e.worker(svc, reg2.ID); w2.Queues.Weights != nil || len(w2.Kinds) != 0 || w2.Type != app.WorkerGo {
		e.t.Fatalf("worker without weights or kinds = %+v", w2)
	}

	// A heartbeat stores the counts and when it came.
	e.clock.Advance(3 * time.Second)
	cmd, err := svc.WorkerHeartbeat(e.ctx, reg.ID, app.WorkerBeat{InFlight: 2, Done: 10, Failed: 1})
	if err != nil || cmd != app.WorkerRun {
		e.t.Fatalf("WorkerHeartbeat = %q, %v; want run", cmd, err)
	}
	w = e.worker(svc, reg.ID)
	if w.InFlight != 2 || w.Done != 10 || w.Failed != 1 || !w.LastSeenAt.Equal(T0.Add(3*time.Second)) || !w.StartedAt.Equal(T0) {
		e.t.Fatalf("after heartbeat: %+v", w)
	}

	// Quiet: stored, audited in the same write, told at the next heartbeat.
	if _, err := svc.SetWorkerCommand(e.ctx, reg.ID, app.WorkerQuiet, "ops"); err != nil {
		e.t.Fatalf("quiet: %v", err)
	}
	if cmd, err := svc.WorkerHeartbeat(e.ctx, reg.ID, app.WorkerBeat{}); err != nil || cmd != app.WorkerQuiet {
		e.t.Fatalf("heartbeat after quiet = %q, %v; want quiet", cmd, err)
	}
	if got, err := e.s.WorkerCommand(e.ctx, reg.ID); err != nil || got != app.WorkerQuiet {
		e.t.Fatalf("store WorkerCommand = %q, %v; want quiet", got, err)
	}
	if st := e.worker(svc, reg.ID).State; st != app.WorkerQuieted {
		e.t.Fatalf("state after quiet = %q, want quiet", st)
	}
	audit, err := e.s.ListAudit(e.ctx, app.AuditFilter{Action: "worker.quiet"})
	if err != nil || len(audit) != 1 || audit[0].Actor != "ops" || audit[0].Target != "worker "+reg.ID || audit[0].Count != 1 {
		e.t.Fatalf("audit of quiet = %+v, %v", audit, err)
	}

	// Stop, then quiet no longer (the worker is on its way out).
	if w, err := svc.SetWorkerCommand(e.ctx, reg.ID, app.WorkerStop, "ops"); err != nil || w.State != app.WorkerStopping {
		e.t.Fatalf("stop = %+v, %v", w, err)
	}
	if _, err := svc.SetWorkerCommand(e.ctx, reg.ID, app.WorkerQuiet, "ops"); !errors.Is(err, app.ErrIllegalTransition) {
		e.t.Fatalf("quiet after stop: %v, want ErrIllegalTransition", err)
	}
	if a, _ := e.s.ListAudit(e.ctx, app.AuditFilter{Action: "worker.quiet"}); len(a) != 1 {
		e.t.Fatalf("a refused quiet was audited: %+v", a)
	}
	if a, _ := e.s.ListAudit(e.ctx, app.AuditFilter{Action: "worker.stop"}); len(a) != 1 {
		e.t.Fatalf("stop audited %d times, want 1", len(a))
	}

	// A new registration under the id (a restart) starts over with run.
	e.clock.Advance(time.Second)
	if reg, err := svc.RegisterWorker(e.ctx, workerInput("box-1:4242-a", func(in *app.WorkerInput) { in.PID = 99 })); err != nil || reg.Command != app.WorkerRun {
		e.t.Fatalf("re-register = %+v, %v", reg, err)
	}
	w = e.worker(svc, reg.ID)
	if w.Command != app.WorkerRun || w.PID != 99 || w.Done != 0 || !w.StartedAt.Equal(T0.Add(4*time.Second)) {
		e.t.Fatalf("after re-register: %+v", w)
	}

	// Unknown ids: 404 worker_not_found, nothing audited.
	if _, err := svc.WorkerHeartbeat(e.ctx, "nobody", app.WorkerBeat{}); !errors.Is(err, app.ErrWorkerNotFound) {
		e.t.Fatalf("heartbeat of an unknown worker: %v, want ErrWorkerNotFound", err)
	}
	if _, err := svc.SetWorkerCommand(e.ctx, "nobody", app.WorkerStop, "ops"); !errors.Is(err, app.ErrWorkerNotFound) {
		e.t.Fatalf("stop of an unknown worker: %v, want ErrWorkerNotFound", err)
	}
	if a, _ := e.s.ListAudit(e.ctx, app.AuditFilter{Action: "worker.stop"}); len(a) != 1 {
		e.t.Fatalf("a stop of an unknown worker was audited: %+v", a)
	}

	// Three missed heartbeats: gone.
	e.clock.Advance(app.WorkerGoneAfter + time.Millisecond)
	if st := e.worker(svc, reg.ID).State; st != app.WorkerGone {
		e.t.Fatalf("state after 15s without heartbeat = %q, want gone", st)
	}
	ws, _, err := svc.Workers(e.ctx)
	if err != nil || len(ws) != 2 || ws[0].ID > ws[1].ID {
		e.t.Fatalf("Workers = %d, %v; want 2 in id order", len(ws), err)
	}

	// worker.changed: two registrations, quiet, stop, the re-registration.
	var seen []string
	for len(seen) < 5 {
		select {
		case ev := <-sub.C:
			seen = append(seen, string(ev.Data))
		case <-time.After(5 * time.Second):
			e.t.Fatalf("worker.changed events: %q, want 5", seen)
		}
	}
}

func testWorkerRegistryRefusesBadInput(e *env) {
	svc := e.service(nil)
	long := make([]byte, app.MaxWorkerIDBytes+1)
	for i := range long {
		long[i] = 'a'
	}
	for name, mod := range map[string]func(*app.WorkerInput){
		"long id":           func(in *app.WorkerInput) { in.ID = string(long) },
		"id with a space":   func(in *app.WorkerInput) { in.ID = "a b" },
		"id with a NUL":     func(in *app.WorkerInput) { in.ID = "a\x00b" },
		"id not UTF-8":      func(in *app.WorkerInput) { in.ID = "a\xffb" },
		"no host":           func(in *app.WorkerInput) { in.Host = "" },
		"pid zero":          func(in *app.WorkerInput) { in.PID = 0 },
		"negative pid":      func(in *app.WorkerInput) { in.PID = -1 },
		"pid over 2^31-1":   func(in *app.WorkerInput) { in.PID = app.MaxWorkerPID + 1 },
		"concurrency zero":  func(in *app.WorkerInput) { in.Concurrency = 0 },
		"no queues":         func(in *app.WorkerInput) { in.Queues = nil },
		"empty queues":      func(in *app.WorkerInput) { in.Queues = &app.QueueChoice{} },
		"bad queue name":    func(in *app.WorkerInput) { in.Queues = &app.QueueChoice{Names: []string{"a b"}} },
		"bad weight":        func(in *app.WorkerInput) { in.Queues = &app.QueueChoice{Names: []string{"a"}, Weights: []int{0}} },
		"bad kind":          func(in *app.WorkerInput) { in.Kinds = []string{"no spaces"} },
		"unknown type":      func(in *app.WorkerInput) { in.Type = "cron" },
		"version too long":  func(in *app.WorkerInput) { in.Version = string(long[:101]) },
		"control in host":   func(in *app.WorkerInput) { in.Host = "a\nb" },
		"control in verson": func(in *app.WorkerInput) { in.Version = "1\x1b[31m" },
	} {
		var ie *app.InvalidError
		if _, err := svc.RegisterWorker(e.ctx, workerInput("w", mod)); !errors.As(err, &ie) {
			e.t.Errorf("RegisterWorker with %s: %v, want an InvalidError", name, err)
		}
	}
	if ws, _, err := svc.Workers(e.ctx); err != nil || len(ws) != 0 {
		e.t.Fatalf("refused registrations stored %d workers (%v)", len(ws), err)
	}
	var ie *app.InvalidError
	if _, err := svc.WorkerHeartbeat(e.ctx, "w", app.WorkerBeat{Done: -1}); !errors.As(err, &ie) {
		e.t.Fatalf("heartbeat with a negative count: %v, want an InvalidError", err)
	}
	if _, err := svc.SetWorkerCommand(e.ctx, "w", "pause", "ops"); !errors.As(err, &ie) {
		e.t.Fatalf("command pause: %v, want an InvalidError", err)
	}
}

func testWorkerRegistryPruneIsBounded(e *env) {
	svc := e.service(nil)
	for _, id := range []string{"old-1", "old-2", "old-3", "old-4", "old-5"} {
		if _, err := svc.RegisterWorker(e.ctx, workerInput(id)); err != nil {
			e.t.Fatal(err)
		}
	}
	e.clock.Advance(app.WorkerRetention + time.Minute)
	if _, err := svc.RegisterWorker(e.ctx, workerInput("fresh")); err != nil {
		e.t.Fatal(err)
	}
	before := e.clock.Now().Add(-app.WorkerRetention)
	var n int
	if err := e.s.Write(e.ctx, func(tx app.Tx) error {
		var err error
		n, err = tx.DeleteWorkers(before, 2)
		return err
	}); err != nil || n != 2 {
		e.t.Fatalf("DeleteWorkers(limit 2) = %d, %v; want 2", n, err)
	}
	if n, err := app.PruneWorkers(e.ctx, e.s, before, 2); err != nil || n != 3 {
		e.t.Fatalf("PruneWorkers(limit 2) = %d, %v; want the 3 left, in statements of 2", n, err)
	}
	ws, _, err := svc.Workers(e.ctx)
	if err != nil || len(ws) != 1 || ws[0].ID != "fresh" {
		e.t.Fatalf("after pruning: %+v, %v; want only fresh", ws, err)
	}
	// The retention sweep prunes too.
	e.clock.Advance(app.WorkerRetention + time.Minute)
	if _, err := (&app.Maintainer{Service: svc}).Sweep(e.ctx); err != nil {
		e.t.Fatal(err)
	}
	if ws, _, _ := svc.Workers(e.ctx); len(ws) != 0 {
		e.t.Fatalf("Sweep left %d workers not seen for over an hour", len(ws))
	}
}

func testWorkerQuietOrStoppedClaimsNothing(e *env) {
	svc := e.service(nil)
	e.submitN(3, "default", "k")
	for _, id := range []string{"quiet-one", "stopped-one", "running-one"} {
		if _, err := svc.RegisterWorker(e.ctx, workerInput(id, func(in *app.WorkerInput) {
			in.Queues = &app.QueueChoice{Names: []string{"default"}}
		})); err != nil {
			e.t.Fatal(err)
		}
	}
	for id, cmd := range map[string]string{"quiet-one": app.WorkerQuiet, "stopped-one": app.WorkerStop} {
		if _, err := svc.SetWorkerCommand(e.ctx, id, cmd, "ops"); err != nil {
			e.t.Fatal(err)
		}
	}
	claim := func(svc *app.Service, id string) []*app.Job {
		e.t.Helper()
		jobs, err := svc.Claim(e.ctx, "default", app.ClaimInput{WorkerID: id, Limit: 1})
		if err != nil {
			e.t.Fatalf("Claim as %s: %v", id, err)
		}
		return jobs
	}
	for _, id := range []string{"quiet-one", "stopped-one"} {
		if jobs := claim(svc, id); len(jobs) != 0 {
			e.t.Fatalf("claim as %s handed out %d jobs, want none", id, len(jobs))
		}
		if cmd, _ := svc.WorkerCommand(e.ctx, id); cmd == app.WorkerRun || cmd == "" {
			e.t.Fatalf("WorkerCommand(%s) = %q", id, cmd)
		}
		// Another node (a Service without the cache) sees it too.
		if jobs := claim(e.service(nil), id); len(jobs) != 0 {
			e.t.Fatalf("claim as %s on another node handed out %d jobs", id, len(jobs))
		}
		// A claim over several queues too.
		jobs, err := svc.ClaimQueues(e.ctx, app.ClaimInput{WorkerID: id, Limit: 3, Queues: &app.QueueChoice{Names: []string{"default", "other"}}})
		if err != nil || len(jobs) != 0 {
			e.t.Fatalf("ClaimQueues as %s = %d jobs, %v; want none", id, len(jobs), err)
		}
	}
	if jobs := claim(svc, "running-one"); len(jobs) != 1 {
		e.t.Fatalf("claim as a running worker = %d jobs, want 1", len(jobs))
	}
	if jobs := claim(svc, "never-registered"); len(jobs) != 1 {
		e.t.Fatalf("claim as an unregistered worker = %d jobs, want 1", len(jobs))
	}
	if cmd, err := svc.WorkerCommand(e.ctx, "never-registered"); cmd != "" || err != nil {
		e.t.Fatalf("WorkerCommand of an unregistered id = %q, %v; want \"\"", cmd, err)
	}
	// A node that read the command before it changed learns within a second.
	other := e.service(nil)
	if jobs := claim(other, "running-one"); len(jobs) != 1 {
		e.t.Fatalf("claim as running-one on the other node = %d jobs, want 1", len(jobs))
	}
	if _, err := svc.SetWorkerCommand(e.ctx, "running-one", app.WorkerQuiet, "ops"); err != nil {
		e.t.Fatal(err)
	}
	e.submitOne("default", "k")
	deadline := time.Now().Add(3 * time.Second)
	for {
		cmd, err := other.WorkerCommand(e.ctx, "running-one")
		if err != nil {
			e.t.Fatal(err)
		}
		if cmd == app.WorkerQuiet {
			break
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("the other node still reads %q for running-one after 3s", cmd)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if jobs := claim(other, "running-one"); len(jobs) != 0 {
		e.t.Fatalf("claim as quieted running-one on the other node = %d jobs, want none", len(jobs))
	}
}

// testWorkerReadByIDBeyondTheList: a worker past the list's cut is read by
// id, told to quiet, and hears it at its heartbeat (it used to be 404, so
// it registered again and its quiet was undone); the list says it was cut.
func testWorkerReadByIDBeyondTheList(e *env) {
	svc := e.service(nil)
	now := e.clock.Now()
	if err := e.s.Write(e.ctx, func(tx app.Tx) error {
		for i := range app.MaxWorkersListed {
			if err := tx.PutWorker(&app.Worker{ID: fmt.Sprintf("w%04d", i), Host: "box", PID: i + 1,
				Queues: app.QueueChoice{Names: []string{"default"}}, Concurrency: 1, Type: app.WorkerHTTP,
				Command: app.WorkerRun, StartedAt: now, LastSeenAt: now}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		e.t.Fatalf("PutWorker of %d workers: %v", app.MaxWorkersListed, err)
	}
	if ws, truncated, err := svc.Workers(e.ctx); err != nil || len(ws) != app.MaxWorkersListed || truncated {
		e.t.Fatalf("Workers of %d = %d, truncated %v, %v; want all, not truncated", app.MaxWorkersListed, len(ws), truncated, err)
	}
	last := fmt.Sprintf("w%04d", app.MaxWorkersListed) // sorts after every other
	if _, err := svc.RegisterWorker(e.ctx, workerInput(last)); err != nil {
		e.t.Fatal(err)
	}
	ws, truncated, err := svc.Workers(e.ctx)
	if err != nil || len(ws) != app.MaxWorkersListed || !truncated || ws[len(ws)-1].ID != fmt.Sprintf("w%04d", app.MaxWorkersListed-1) {
		e.t.Fatalf("Workers of %d = %d, truncated %v, %v; want the first %d, truncated", app.MaxWorkersListed+1, len(ws), truncated, err, app.MaxWorkersListed)
	}
	if w := e.worker(svc, last); w.ID != last || w.State != app.WorkerRunning {
		e.t.Fatalf("Worker(%s) = %+v", last, w)
	}
	if _, err := svc.SetWorkerCommand(e.ctx, last, app.WorkerQuiet, "ops"); err != nil {
		e.t.Fatalf("quiet %s: %v", last, err)
	}
	if cmd, err := svc.WorkerHeartbeat(e.ctx, last, app.WorkerBeat{InFlight: 1}); err != nil || cmd != app.WorkerQuiet {
		e.t.Fatalf("heartbeat of %s = %q, %v; want quiet", last, cmd, err)
	}
	if w := e.worker(svc, last); w.Command != app.WorkerQuiet || w.State != app.WorkerQuieted || w.InFlight != 1 {
		e.t.Fatalf("Worker(%s) after quiet and heartbeat = %+v", last, w)
	}
	if _, err := svc.Worker(e.ctx, "w9999"); !errors.Is(err, app.ErrWorkerNotFound) {
		e.t.Fatalf("Worker of an unknown id: %v, want ErrWorkerNotFound", err)
	}
}

// testWorkerPIDAndCountBounds: one rule on every store: pid 1..2^31-1,
// counts 0..2^53; past them an InvalidError naming the field (PostgreSQL
// answered "integer out of range" before).
func testWorkerPIDAndCountBounds(e *env) {
	svc := e.service(nil)
	var ie *app.InvalidError
	if _, err := svc.RegisterWorker(e.ctx, workerInput("big-pid", func(in *app.WorkerInput) { in.PID = 99999999999 })); !errors.As(err, &ie) || ie.Field != "pid" {
		e.t.Fatalf("RegisterWorker with pid 99999999999: %v, want an InvalidError of pid", err)
	}
	if _, err := svc.RegisterWorker(e.ctx, workerInput("w", func(in *app.WorkerInput) { in.PID = app.MaxWorkerPID })); err != nil {
		e.t.Fatalf("RegisterWorker with pid 2^31-1: %v", err)
	}
	big := app.WorkerBeat{InFlight: 3000000000, Done: app.MaxWorkerCount, Failed: app.MaxWorkerCount}
	if cmd, err := svc.WorkerHeartbeat(e.ctx, "w", big); err != nil || cmd != app.WorkerRun {
		e.t.Fatalf("heartbeat with in_flight 3000000000 and done, failed 2^53 = %q, %v; want run", cmd, err)
	}
	if w := e.worker(svc, "w"); w.PID != app.MaxWorkerPID || w.InFlight != big.InFlight || w.Done != big.Done || w.Failed != big.Failed {
		e.t.Fatalf("worker after the heartbeat = %+v, want pid 2^31-1 and %+v", w, big)
	}
	for field, b := range map[string]app.WorkerBeat{
		"in_flight": {InFlight: app.MaxWorkerCount + 1},
		"done":      {Done: app.MaxWorkerCount + 1},
		"failed":    {Failed: -1},
	} {
		if _, err := svc.WorkerHeartbeat(e.ctx, "w", b); !errors.As(err, &ie) || ie.Field != field {
			e.t.Errorf("heartbeat with %+v: %v, want an InvalidError of %s", b, err, field)
		}
	}
}

// testWorkersListedInByteOrder: every store lists workers in the byte
// order of their ids (PostgreSQL with COLLATE "C", whatever the
// database's collation), so the cut list holds the same workers.
func testWorkersListedInByteOrder(e *env) {
	svc := e.service(nil)
	for _, id := range []string{"a:1", "_x", "B:1"} {
		if _, err := svc.RegisterWorker(e.ctx, workerInput(id)); err != nil {
			e.t.Fatal(err)
		}
	}
	ws, _, err := svc.Workers(e.ctx)
	var ids []string
	for _, w := range ws {
		ids = append(ids, w.ID)
	}
	if want := []string{"B:1", "_x", "a:1"}; err != nil || !slices.Equal(ids, want) {
		e.t.Fatalf("Workers = %q, %v; want %q (byte order)", ids, err, want)
	}
}
