# queue: a durable job queue in one static binary. `make help` lists targets.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse --short HEAD 2>/dev/null)
LDFLAGS := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT)
GO      ?= go

PREFIX  ?= /usr/local
DESTDIR ?=
# The .deb's version: a tag v1.2.3 gives 1.2.3, a later commit 1.2.3+git<commit time>.<commit>
# (0.0.0+git... before a first tag), which sorts by commit time (packaging/version.sh).
PKG_VERSION ?= $(shell sh packaging/version.sh)
NFPM    := github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.45.2

.PHONY: build run test lint bench bench-big soak package lintian install clean help

build: ## Static binary ./queue (CGO_ENABLED=0, version stamped)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o queue .

run: build ## Build and run the server on ./queue.db
	./queue serve

test: ## Every test with -race; the PostgreSQL legs run when QUEUE_TEST_POSTGRES_DSN is set (always in CI)
	$(GO) test -race -shuffle=on -timeout 15m ./...

lint: ## gofmt, go vet and staticcheck
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo 'run gofmt -w'; exit 1; }
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.7.0 ./...

bench: ## Benchmarks: the store's, then queue beside River and goqite (bench/, ~30 min; BENCH_ARGS="-short" or see docs/benchmarks.md)
	$(GO) test -run '^$$' -bench . -benchtime 2s ./sqlite/
	@if [ -n "$$QUEUE_TEST_POSTGRES_DSN" ]; then $(GO) test -run '^$$' -bench Workflow -benchtime 3x ./postgres/ && \
		$(GO) test -run '^$$' -bench 'Keys|Fairness' -benchtime 2s ./postgres/; \
		else echo "QUEUE_TEST_POSTGRES_DSN is not set: the PostgreSQL workflow and key benchmarks are skipped"; fi
	$(MAKE) build
	cd bench && $(GO) run ./workflowhttp -bin ../queue
	@if [ -n "$$QUEUE_TEST_POSTGRES_DSN" ]; then cd bench && $(GO) run ./workflowhttp -bin ../queue -db "$$QUEUE_TEST_POSTGRES_DSN"; fi
	@if [ -n "$$QUEUE_TEST_POSTGRES_DSN" ]; then cd bench && $(GO) run ./nodes -bin ../queue -db "$$QUEUE_TEST_POSTGRES_DSN" $(if $(findstring -short,$(BENCH_ARGS)),-short); \
		else echo "QUEUE_TEST_POSTGRES_DSN is not set: bench/nodes (several nodes on one PostgreSQL) is skipped"; fi
	@if [ -f bench/go.mod ]; then cd bench && $(GO) run . $(BENCH_ARGS); fi

BIG_JOBS ?= 10000000
BIG_ARGS ?=
bench-big: build ## Ten million queued jobs on SQLite (and PostgreSQL with QUEUE_TEST_POSTGRES_DSN): cold start, stats, dashboard, claims, disk (bench/bigdb, ~20 min the first time)
	cd bench && $(GO) run ./bigdb -bin ../queue -jobs $(BIG_JOBS) $(if $(QUEUE_TEST_POSTGRES_DSN),-pg "$(QUEUE_TEST_POSTGRES_DSN)") $(BIG_ARGS)

SOAK_DURATION ?= 10m
soak: build ## Minutes of producers, workers, kill -9, cancels and replays; exits non-zero on any lost job (not in CI)
	$(GO) run ./soak --bin ./queue --duration $(SOAK_DURATION) $(SOAK_ARGS)

package: build ## A .deb in dist/ (binary, systemd unit, config, man page) built with nfpm
	mkdir -p dist
	sh packaging/debian-files.sh $(PKG_VERSION) dist/deb
	VERSION=$(PKG_VERSION) ARCH=$$($(GO) env GOARCH) $(GO) run $(NFPM) package --config packaging/nfpm.yaml --packager deb --target dist/queue_$(PKG_VERSION)_$$($(GO) env GOARCH).deb
	@ls -l dist/*.deb

lintian: package ## Check the .deb with lintian (errors fail; needs the lintian package)
	lintian --fail-on error --info dist/queue_$(PKG_VERSION)_$$($(GO) env GOARCH).deb

install: build ## Install the binary, unit and config under $(DESTDIR)$(PREFIX) and /etc
	install -D -m 0755 queue $(DESTDIR)$(PREFIX)/bin/queue
	mkdir -p $(DESTDIR)$(PREFIX)/share/man/man1
	./queue man | gzip -9n > $(DESTDIR)$(PREFIX)/share/man/man1/queue.1.gz
	install -D -m 0644 packaging/queue.service $(DESTDIR)/etc/systemd/system/queue.service
	sed -i 's|/usr/bin/queue|$(PREFIX)/bin/queue|' $(DESTDIR)/etc/systemd/system/queue.service
	test -e $(DESTDIR)/etc/queue/queue.toml || install -D -m 0600 packaging/queue.toml $(DESTDIR)/etc/queue/queue.toml
	test -e $(DESTDIR)/etc/default/queue || install -D -m 0600 packaging/queue.env.sample $(DESTDIR)/etc/default/queue
	@echo "installed; now: systemctl daemon-reload && systemctl enable --now queue"

clean: ## Remove build output
	rm -rf queue dist

help: ## This list
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F ':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'
