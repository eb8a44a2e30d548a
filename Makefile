GO       ?= go
BIN      ?= bin
# The version is git describe --tags of the checkout: v0.N.M at a tag,
# v0.N.M-K-gSHA K commits after it (-dirty with changes not committed);
# before the first tag, v0.0.0-K-gSHA.
VERSION  ?= $(shell git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null || \
	(n=$$(git rev-list --count HEAD 2>/dev/null) && echo "v0.0.0-$$n-g$$(git rev-parse --short HEAD)$$(git diff --quiet HEAD -- 2>/dev/null || echo -dirty)") || echo dev)
COMMIT   ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS  := -s -w -X github.com/drama-tts/drama/cmd/internal/cli.version=$(VERSION) -X github.com/drama-tts/drama/cmd/internal/cli.commit=$(COMMIT)
PLUGINS  := $(patsubst plugins/%/,%,$(wildcard plugins/*/))
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
DEADCODE    := golang.org/x/tools/cmd/deadcode@v0.52.0
# deadcode exits 0 with findings: the line fails when it prints any. With
# -test a function only tests reach counts as used (the helper packages
# such as enginetest are there for them); one that nothing reaches is dead.
DEADCODE_RUN = echo "$(GO) run $(DEADCODE) -test ./..."; \
	out=$$($(GO) run $(DEADCODE) -test ./...) || exit 1; \
	test -z "$$out" || { printf '%s\n' "$$out"; echo 'deadcode: nothing calls the functions above: remove them, or move one only tests use into a _test.go file'; exit 1; }
FUZZTIME ?= 20s
# Packages whose tests are too slow under the race detector on two cores run
# without it; everything else runs with -race.
NORACE   ?=
# make install puts drama and its engine plugins, each with its .sha256
# file, in $(DESTDIR)$(PREFIX)/bin: drama looks for plugins beside itself.
PREFIX   ?= /usr/local
BINDIR   ?= $(PREFIX)/bin
DESTDIR  ?=

.PHONY: all build plugins install uninstall test test-arm64 dist bench lint fuzz demo proto clean version
all: build

build: plugins
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/drama ./cmd/drama
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/tensorfold-standin ./engine/native/standin/cmd/tensorfold-standin

plugins:
	@mkdir -p $(BIN)
	@for p in $(PLUGINS); do \
		echo "build $(BIN)/drama-engine-$$p"; \
		$(GO) build -trimpath -ldflags '$(LDFLAGS) -X main.version=$(VERSION)' -o $(BIN)/drama-engine-$$p ./plugins/$$p || exit 1; \
		(cd $(BIN) && sha256sum drama-engine-$$p > drama-engine-$$p.sha256) || exit 1; \
	done

install: build
	install -d '$(DESTDIR)$(BINDIR)'
	install -m 0755 $(BIN)/drama '$(DESTDIR)$(BINDIR)/drama'
	@for p in $(PLUGINS); do \
		echo "install $(DESTDIR)$(BINDIR)/drama-engine-$$p"; \
		install -m 0755 $(BIN)/drama-engine-$$p '$(DESTDIR)$(BINDIR)/drama-engine-'$$p || exit 1; \
		install -m 0644 $(BIN)/drama-engine-$$p.sha256 '$(DESTDIR)$(BINDIR)/drama-engine-'$$p.sha256 || exit 1; \
		(cd '$(DESTDIR)$(BINDIR)' && sha256sum --quiet -c drama-engine-$$p.sha256) || exit 1; \
	done

uninstall:
	rm -f '$(DESTDIR)$(BINDIR)/drama'
	@for p in $(PLUGINS); do rm -f '$(DESTDIR)$(BINDIR)/drama-engine-'$$p '$(DESTDIR)$(BINDIR)/drama-engine-'$$p.sha256; done

# make test runs go vet, staticcheck and deadcode (both from the Go module
# proxy, as make lint does) before the tests. It says at its top which real
# clients of the conformance suites are missing, and ends, pass or fail,
# with the suites it skipped: each skip appends a line to $$DRAMA_SKIP_LOG
# (cmd/internal/realclient).
test:
	@scripts/test-skips.sh check
	$(GO) vet ./...
	GOOS=darwin GOARCH=arm64 $(GO) build ./...
	GOOS=darwin GOARCH=arm64 $(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	@$(DEADCODE_RUN)
	@log=$$(mktemp) || exit 1; trap 'rm -f $$log' EXIT; \
	echo "$(GO) test -race -count=1 -timeout 30m ./..."; \
	DRAMA_SKIP_LOG=$$log $(GO) test -race -count=1 -timeout 30m ./...; rc=$$?; \
	scripts/test-skips.sh summary $$log; exit $$rc

# make test-arm64 runs every test as linux/arm64 binaries under Debian's
# qemu-user; binfmt_misc runs the arm64 binaries the tests build and start
# under it too (scripts/qemu-binfmt.sh registers it, as root). No -race:
# the race detector does not run under qemu. Tests bound by time scale
# their deadlines by ARM64_TIME_SCALE; the few that cannot run under
# emulation say so in one line.
ARM64_TIME_SCALE ?= 10
test-arm64:
	@scripts/qemu-binfmt.sh --check
	@log=$$(mktemp) || exit 1; trap 'rm -f $$log' EXIT; \
	echo "GOARCH=arm64 $(GO) test -exec qemu-aarch64 -count=1 -timeout 30m ./..."; \
	GOARCH=arm64 DRAMA_TEST_TIME_SCALE=$(ARM64_TIME_SCALE) DRAMA_SKIP_LOG=$$log $(GO) test -exec qemu-aarch64 -count=1 -timeout 30m ./...; rc=$$?; \
	scripts/test-skips.sh summary $$log; exit $$rc

# make dist builds the release archives drama-VERSION-OS-ARCH.tar.gz for
# PLATFORMS into DIST, and DIST/SHA256SUMS (scripts/dist.sh).
DIST      ?= dist
PLATFORMS ?= linux/amd64 linux/arm64 darwin/arm64
dist:
	VERSION='$(VERSION)' LDFLAGS='$(LDFLAGS)' GO='$(GO)' scripts/dist.sh '$(DIST)' $(PLATFORMS)

bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 1 ./...

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); echo 'gofmt: run gofmt -w on the files above'; exit 1)
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	@$(DEADCODE_RUN)

fuzz:
	@$(GO) list ./... | while read pkg; do \
		for t in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
			echo "fuzz $$pkg $$t"; \
			$(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
		done; \
	done

demo: build
	scripts/demo.sh

proto:
	scripts/gen-proto.sh

clean:
	rm -rf $(BIN) demo $(DIST)

version:
	@echo $(VERSION)
