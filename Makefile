# queue: a durable job queue in one static binary. `make help` lists targets.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse --short HEAD 2>/dev/null)
LDFLAGS := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT)
GO      ?= go

.PHONY: build run test lint bench soak package install clean help

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

clean: ## Remove build output
	rm -rf queue dist

help: ## This list
	@grep -E '^[a-z]+:.*## ' $(MAKEFILE_LIST) | awk -F ':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'
