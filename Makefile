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
FUZZTIME ?= 20s
# Packages whose tests are too slow under the race detector on two cores run
# without it; everything else runs with -race.
NORACE   ?=
# make install puts drama and its engine plugins, each with its .sha256
# file, in $(DESTDIR)$(PREFIX)/bin: drama looks for plugins beside itself.
PREFIX   ?= /usr/local
BINDIR   ?= $(PREFIX)/bin
DESTDIR  ?=

.PHONY: all build plugins install uninstall test bench lint fuzz demo proto clean version
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

# make test runs go vet and staticcheck (from the Go module proxy, as make
# lint does) before the tests. It says at its top which real clients of the
# conformance suites are missing, and ends, pass or fail, with the suites
# it skipped: each skip appends a line to $$DRAMA_SKIP_LOG
# (cmd/internal/realclient).
test:
	@scripts/test-skips.sh check
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	@log=$$(mktemp) || exit 1; trap 'rm -f $$log' EXIT; \
	echo "$(GO) test -race -count=1 -timeout 30m ./..."; \
	DRAMA_SKIP_LOG=$$log $(GO) test -race -count=1 -timeout 30m ./...; rc=$$?; \
	scripts/test-skips.sh summary $$log; exit $$rc

bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 1 ./...

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); echo 'gofmt: run gofmt -w on the files above'; exit 1)
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

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
	rm -rf $(BIN) demo

version:
	@echo $(VERSION)
