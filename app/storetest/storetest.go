// Package storetest is the conformance suite of app.Store: every store
// behaviour the contract promises, run against every store (sqlite,
// postgres, memory) by that store's TestStore. A behaviour change of a store
// starts as a case here. It imports testing, so only _test.go files import it.
package storetest

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuehq/queue/app"
)

// Opener returns a fresh, empty store built with opts (its clock, bus and
// fault hook); it registers the store's Close with t.Cleanup.
type Opener func(t *testing.T, opts app.StoreOptions) app.Store

// T0 is where every test's fake clock starts.
var T0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// env is one test's store with its clock and bus.
type env struct {
	t      *testing.T
	s      app.Store
	clock  *app.FakeClock
	bus    *app.Bus
	fault  atomic.Pointer[app.FaultFunc]
	ctx    context.Context
	open   Opener
	hooked bool // the store has the fault hook (see newEnv)
	// limits are the key limits the store sees (see setLimits).
	limits atomic.Pointer[map[string]app.KeyLimits]
	// webhooks gives the webhook rules the store sees (see useWebhooks).
	webhooks atomic.Pointer[func() *app.WebhookRules]
}

// newEnv opens a store; with hooked, one whose fault hook setFault sets.
// Only the fault tests have one: a store may take a slower path when a
// hook is set (PostgreSQL's piped writes send COMMIT after the results).
func newEnv(t *testing.T, open Opener, hooked bool) *env {
	e := &env{t: t, clock: app.NewFakeClock(T0), bus: app.NewBus(), ctx: t.Context(), open: open, hooked: hooked}
	opts := app.StoreOptions{Clock: e.clock, Bus: e.bus, Capped: capped, KeyLimits: func(q string) app.KeyLimits {
		if m := e.limits.Load(); m != nil {
			return (*m)[q]
		}
		return app.KeyLimits{}
	}, Webhooks: func() *app.WebhookRules {
		if f := e.webhooks.Load(); f != nil {
			return (*f)()
		}
		return nil
	}}
	if hooked {
		opts.Fault = func(ctx context.Context, p app.FaultPoint, id int64) error {
			if f := e.fault.Load(); f != nil {
				return (*f)(ctx, p, id)
			}
			return nil
		}
	}
	e.s = open(t, opts)
	return e
}

// setLimits sets how queue limits its keys, as a config change would.
func (e *env) setLimits(queue string, l app.KeyLimits) {
	m := map[string]app.KeyLimits{}
	if old := e.limits.Load(); old != nil {
		for k, v := range *old {
			m[k] = v
		}
	}
	m[queue] = l
	e.limits.Store(&m)
}

// setFault sets the store's fault hook. A store opened without one would
// never call it, and the test would pass without injecting anything.
func (e *env) setFault(f app.FaultFunc) {
	if !e.hooked {
		e.t.Fatal("setFault on a store without a fault hook: name the test Fault... (see Run)")
	}
	if f == nil {
		e.fault.Store(nil)
		return
	}
	e.fault.Store(&f)
}

// capped is the stores' StoreOptions.Capped: every queue but those named
// uncapped-..., so that the other cases see a completion wake as before.
func capped(queue string) bool { return !strings.HasPrefix(queue, "uncapped-") }

// extraCases are the cases the files of later features add in their init
// functions (each file its own names), so no two of them edit the list above.
var extraCases = map[string]func(*env){}

// Run runs every case against a fresh store from open.
func Run(t *testing.T, open Opener) {
	cases := map[string]func(*env){
		"SubmitStoresEveryField":                   testSubmitStoresEveryField,
		"SubmitBatchIsAllOrNothing":                testSubmitBatchIsAllOrNothing,
		"LargeMixedBatchKeepsItsJobs":              testLargeMixedBatchKeepsItsJobs,
		"KeyGivenTwiceInABatch":                    testKeyGivenTwiceInABatch,
		"IdempotencyKeyReplaysAndConflicts":        testIdempotencyKeyReplaysAndConflicts,
		"IdempotencyKeyHoldsAfterDeadLetter":       testIdempotencyKeyHoldsAfterDeadLetter,
		"MaxQueuedRefusesAndStoresNothing":         testMaxQueuedRefusesAndStoresNothing,
		"ClaimOrderIsPriorityRunAtID":              testClaimOrderIsPriorityRunAtID,
		"ClaimSkipsScheduledExpiredAndKinds":       testClaimSkipsScheduledExpiredAndKinds,
		"ClaimSetsLeaseAndAttempts":                testClaimSetsLeaseAndAttempts,
		"ClaimAnswersTheStoredRow":                 testClaimAnswersTheStoredRow,
		"ClaimHonoursConcurrencyLimit":             testClaimHonoursConcurrencyLimit,
		"ClaimHonoursRateLimit":                    testClaimHonoursRateLimit,
		"PausedQueueHandsOutNothing":               testPausedQueueHandsOutNothing,
		"ConcurrentClaimersNeverShareAJob":         testConcurrentClaimersNeverShareAJob,
		"ConcurrentSubmitsGetTheirOwnRows":         testConcurrentSubmitsGetTheirOwnRows,
		"HeartbeatExtendsAndIsFenced":              testHeartbeatExtendsAndIsFenced,
		"StaleLeaseChangesNothing":                 testStaleLeaseChangesNothing,
		"CompleteStoresResult":                     testCompleteStoresResult,
		"CompleteBatchFencesEachItem":              testCompleteBatchFencesEachItem,
		"LargeCompletionKeepsEachResult":           testLargeCompletionKeepsEachResult,
		"CompleteAfterLeavingProcessingLoses":      testCompleteAfterLeavingProcessingLoses,
		"FailRetriesWithBackoff":                   testFailRetriesWithBackoff,
		"FailOnLastAttemptDeadLetters":             testFailOnLastAttemptDeadLetters,
		"FailWithoutRetryDeadLetters":              testFailWithoutRetryDeadLetters,
		"DeadLetterDoesNotReuseIDs":                testDeadLetterDoesNotReuseIDs,
		"SnoozeGivesTheAttemptBack":                testSnoozeGivesTheAttemptBack,
		"CancelQueuedProcessingAndTerminal":        testCancelQueuedProcessingAndTerminal,
		"CancelAcknowledgedWithLease":              testCancelAcknowledgedWithLease,
		"StaleRecoveryRetriesAndDeadLetters":       testStaleRecoveryRetriesAndDeadLetters,
		"StaleRecoveryFinishesRequestedCancel":     testStaleRecoveryFinishesRequestedCancel,
		"TTLExpiresQueuedJobsEvenWhenPaused":       testTTLExpiresQueuedJobsEvenWhenPaused,
		"FaultInsideDeadLetterMoveLosesNothing":    testFaultInsideDeadLetterMoveLosesNothing,
		"FaultInsideEveryWriteChangesNothing":      testFaultInsideEveryWriteChangesNothing,
		"DeadLetterMoveIsAtomicForReaders":         testDeadLetterMoveIsAtomicForReaders,
		"ReplayKeepsRowAndCountsResurrections":     testReplayKeepsRowAndCountsResurrections,
		"ReplayedJobFailsIntoDLQUnderItsOwnID":     testReplayedJobFailsIntoDLQUnderItsOwnID,
		"ReplaySpacesRunAt":                        testReplaySpacesRunAt,
		"PurgeDeletesOnlyMatchingRows":             testPurgeDeletesOnlyMatchingRows,
		"ListDeadFiltersAndPages":                  testListDeadFiltersAndPages,
		"MoveToDeadTakesQueuedJobsOnly":            testMoveToDeadTakesQueuedJobsOnly,
		"DrainCancelsQueuedJobs":                   testDrainCancelsQueuedJobs,
		"ListFiltersAndPages":                      testListFiltersAndPages,
		"StatsCountEveryState":                     testStatsCountEveryState,
		"DeleteOldIsBoundedAndScoped":              testDeleteOldIsBoundedAndScoped,
		"PeriodicFireEnqueuesOnce":                 testPeriodicFireEnqueuesOnce,
		"PeriodicSkipIfPending":                    testPeriodicSkipIfPending,
		"OnceRecordRunsOnce":                       testOnceRecordRunsOnce,
		"AuditRecordsAdminActions":                 testAuditRecordsAdminActions,
		"EventsRecordTheLifecycle":                 testEventsRecordTheLifecycle,
		"WakeFiresOnSubmit":                        testWakeFiresOnSubmit,
		"CompletionWakesOnlyCappedQueues":          testCompletionWakesOnlyCappedQueues,
		"ClaimAfterDrainWakesOnSubmit":             testClaimAfterDrainWakesOnSubmit,
		"PausedStateSurvivesInStore":               testPausedStateSurvivesInStore,
		"ThroughputCountsCompletedAndFailed":       testThroughputCountsCompletedAndFailed,
		"ServiceBulkActionsBatchAndAudit":          testServiceBulkActionsBatchAndAudit,
		"ServiceBulkRefusesEmptyFilter":            testServiceBulkRefusesEmptyFilter,
		"MaintainerSweepHonoursRetention":          testMaintainerSweepHonoursRetention,
		"SchedulerCatchesUpOnceAfterRestart":       testSchedulerCatchesUpOnceAfterRestart,
		"ServiceClaimLongPollWakesOnSubmit":        testServiceClaimLongPollWakesOnSubmit,
		"ServiceGetWaitReturnsWhenJobIsTerminal":   testServiceGetWaitReturnsWhenJobIsTerminal,
		"ServiceBackoffIsJitteredPerQueue":         testServiceBackoffIsJitteredPerQueue,
		"ServiceMaxQueuedIsWired":                  testServiceMaxQueuedIsWired,
		"MaintainerTickRecoversAndExpires":         testMaintainerTickRecoversAndExpires,
		"FailAfterCancelRequestEndsTheAttemptOnce": testFailAfterCancelRequestEndsTheAttemptOnce,
		"DiagnoseFindsStuckLeasesAndDLQGrowth":     testDiagnoseFindsStuckLeasesAndDLQGrowth,
		"CompleteStepByStepAsTheStore":             testCompleteStepByStepAsTheStore,
		"ReplayCarriesIdempotencyKey":              testReplayCarriesIdempotencyKey,
		"ReplayRequestIsIdempotent":                testReplayRequestIsIdempotent,
		"ReplayOverrides":                          testReplayOverrides,
		"BulkNeedsARealFilter":                     testBulkNeedsARealFilter,
		"DLQListsByMoveTime":                       testDLQListsByMoveTime,
		"BulkActsOnWhatWasConfirmed":               testBulkActsOnWhatWasConfirmed,
		"MoveByIDWithNote":                         testMoveByIDWithNote,
		"DeadRowKeepsTheAttempt":                   testDeadRowKeepsTheAttempt,
		"DeadStatsAddUp":                           testDeadStatsAddUp,
		"ConcurrentSubmissionsWithOneKey":          testConcurrentSubmissionsWithOneKey,
		"DeadLetterRacingRetryAndCancel":           testDeadLetterRacingRetryAndCancel,
		"StatsFlagUnclaimedKinds":                  testStatsFlagUnclaimedKinds,
		"DLQAlertHook":                             testDLQAlertHook,
		"DeadLetterRowIsNeverOverwritten":          testDeadLetterRowIsNeverOverwritten,
		"WorkflowDiamondRunsInOrder":               testWorkflowDiamondRunsInOrder,
		"WorkflowFanOutFanIn":                      testWorkflowFanOutFanIn,
		"WorkflowParentsInDependsOnOrder":          testWorkflowParentsInDependsOnOrder,
		"WorkflowDeadStepBlocksAndReplayResumes":   testWorkflowDeadStepBlocksAndReplayResumes,
		"WorkflowContinueOnFailure":                testWorkflowContinueOnFailure,
		"WorkflowCancel":                           testWorkflowCancel,
		"WorkflowQueuedCancelOnItsOwnBlocks":       testWorkflowQueuedCancelOnItsOwnBlocks,
		"WorkflowStepDelayCountsFromRelease":       testWorkflowStepDelayCountsFromRelease,
		"WorkflowListAndRetention":                 testWorkflowListAndRetention,
		"WorkflowExpiredStepBlocks":                testWorkflowExpiredStepBlocks,
		"WorkflowCancelRacesCompletions":           testWorkflowCancelRacesCompletions,
		"WorkflowCancelUnderLoad":                  testWorkflowCancelUnderLoad,
		"WorkflowReleaseOrderIsAsGiven":            testWorkflowReleaseOrderIsAsGiven,
		"WorkflowRetentionWaitsForItsLastJob":      testWorkflowRetentionWaitsForItsLastJob,
		"WorkflowReplayOfAnEarlierFailureIsPlain":  testWorkflowReplayOfAnEarlierFailureIsPlain,
		"WorkflowReplayAfterItsWorkflowIsGone":     testWorkflowReplayAfterItsWorkflowIsGone,
		"WorkflowStaleLeaseRetriesTheStep":         testWorkflowStaleLeaseRetriesTheStep,
		"KeyConcurrencyOneRunsInOrder":             testKeyConcurrencyOneRunsInOrder,
		"KeyConcurrencyN":                          testKeyConcurrencyN,
		"KeySlotFreedOnEveryEnd":                   testKeySlotFreedOnEveryEnd,
		"KeyRetryKeepsItsPlace":                    testKeyRetryKeepsItsPlace,
		"KeyRoundRobin":                            testKeyRoundRobin,
		"KeyRate":                                  testKeyRate,
		"KeyLimitLiftedBySweep":                    testKeyLimitLiftedBySweep,
		"KeyReplayKeepsItsKey":                     testKeyReplayKeepsItsKey,
		"KeyOnAQueueWithoutLimitsIsALabel":         testKeyOnAQueueWithoutLimitsIsALabel,
		"UniqueJobs":                               testUniqueJobs,
		"UniqueUnderConcurrency":                   testUniqueUnderConcurrency,
		"Debounce":                                 testDebounce,
		"Throttle":                                 testThrottle,
		"ClaimQueuesWeightedAndStrict":             testClaimQueuesWeightedAndStrict,
	}
	for n, f := range extraCases {
		cases[n] = f
	}
	names := make([]string, 0, len(cases))
	for n := range cases {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		run := cases[name]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			run(newEnv(t, open, strings.HasPrefix(name, "Fault"))) // only fault tests get a hook
		})
	}
}

// ---- helpers ----

func (e *env) newJob(queue, kind string, mods ...func(*app.NewJob)) app.NewJob {
	nj := app.NewJob{Queue: queue, Kind: kind, Payload: json.RawMessage(`{"n":1}`), RunAt: e.clock.Now(),
		MaxAttempts: 3, Timeout: 30 * time.Second}
	for _, m := range mods {
		m(&nj)
	}
	return nj
}

func (e *env) submit(jobs ...app.NewJob) []*app.Job {
	e.t.Helper()
	res, err := app.Submit(e.ctx, e.s, app.SubmitRequest{Jobs: jobs})
	if err != nil {
		e.t.Fatalf("Submit(%d jobs): %v", len(jobs), err)
	}
	out := make([]*app.Job, len(res))
	for i, r := range res {
		out[i] = r.Job
	}
	return out
}

// submitN submits n jobs of queue and kind in one batch.
func (e *env) submitN(n int, queue, kind string, mods ...func(*app.NewJob)) []*app.Job {
	e.t.Helper()
	batch := make([]app.NewJob, n)
	for i := range batch {
		batch[i] = e.newJob(queue, kind, mods...)
	}
	return e.submit(batch...)
}

func (e *env) submitOne(queue, kind string, mods ...func(*app.NewJob)) *app.Job {
	e.t.Helper()
	return e.submit(e.newJob(queue, kind, mods...))[0]
}

func (e *env) claim(queue string, n int) []*app.Job {
	e.t.Helper()
	jobs, err := e.s.Claim(e.ctx, app.ClaimRequest{Queue: queue, WorkerID: "w1", Limit: n})
	if err != nil {
		e.t.Fatalf("Claim(%q, %d): %v", queue, n, err)
	}
	return jobs
}

func (e *env) claimOne(queue string) *app.Job {
	e.t.Helper()
	jobs := e.claim(queue, 1)
	if len(jobs) != 1 {
		e.t.Fatalf("Claim(%q, 1) = %d jobs, want 1", queue, len(jobs))
	}
	return jobs[0]
}

func (e *env) get(id int64) *app.Job {
	e.t.Helper()
	j, d, err := e.s.Lookup(e.ctx, id)
	if err != nil {
		e.t.Fatalf("Lookup(%d): %v", id, err)
	}
	if j != nil && d != nil {
		e.t.Fatalf("Lookup(%d): job is in jobs and in the dead-letter table", id)
	}
	if j == nil {
		e.t.Fatalf("Lookup(%d): job is in the dead-letter table (reason %s), want it in jobs", id, d.Reason)
	}
	return j
}

func (e *env) dead(id int64) *app.DeadJob {
	e.t.Helper()
	j, d, err := e.s.Lookup(e.ctx, id)
	if err != nil {
		e.t.Fatalf("Lookup(%d): %v", id, err)
	}
	if j != nil {
		e.t.Fatalf("Lookup(%d): job is in jobs (status %s), want it in the dead-letter table", id, j.Status)
	}
	return d
}

func (e *env) fail(j *app.Job, retry bool) *app.FailResult {
	e.t.Helper()
	res, err := app.Fail(e.ctx, e.s, app.FailRequest{ID: j.ID, Lease: j.Lease, Error: "boom", Retry: retry, Backoff: fixedBackoff})
	if err != nil {
		e.t.Fatalf("Fail(%d): %v", j.ID, err)
	}
	return res
}

func (e *env) complete(j *app.Job, result string) {
	e.t.Helper()
	errs, err := e.s.Complete(e.ctx, []app.Completion{{ID: j.ID, Lease: j.Lease, Result: json.RawMessage(result)}})
	if err != nil || errs[0] != nil {
		e.t.Fatalf("Complete(%d): %v %v", j.ID, err, errs)
	}
}

// deadLetter runs j through failures until it is in the DLQ.
func (e *env) deadLetter(j *app.Job) *app.DeadJob {
	e.t.Helper()
	c := e.claimOne(j.Queue)
	if c.ID != j.ID {
		e.t.Fatalf("claimed %d, want %d", c.ID, j.ID)
	}
	if r := e.fail(c, false); r.Outcome != app.OutcomeDeadLettered {
		e.t.Fatalf("Fail(retry=false) outcome %s", r.Outcome)
	}
	return e.dead(j.ID)
}

func fixedBackoff(queue string, attempt int) time.Duration {
	return time.Duration(attempt) * 10 * time.Second
}

func ids(jobs []*app.Job) []int64 {
	out := make([]int64, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}

func withPriority(p int) func(*app.NewJob)      { return func(n *app.NewJob) { n.Priority = p } }
func withRunAt(t time.Time) func(*app.NewJob)   { return func(n *app.NewJob) { n.RunAt = t } }
func withTags(tags ...string) func(*app.NewJob) { return func(n *app.NewJob) { n.Tags = tags } }
func withKey(k string) func(*app.NewJob)        { return func(n *app.NewJob) { n.IdempotencyKey = k } }
func withMax(m int) func(*app.NewJob)           { return func(n *app.NewJob) { n.MaxAttempts = m } }
func withPayload(p string) func(*app.NewJob) {
	return func(n *app.NewJob) { n.Payload = json.RawMessage(p) }
}
func withTimeout(d time.Duration) func(*app.NewJob) { return func(n *app.NewJob) { n.Timeout = d } }

func sameIDs(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
