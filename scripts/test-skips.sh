#!/usr/bin/env bash
# test-skips.sh: what make test says of the real clients its conformance
# suites run (cmd/internal/realclient finds them; README, "make test").
#
#   scripts/test-skips.sh check        # before the tests: which clients are missing
#   scripts/test-skips.sh summary LOG  # after them: the suites skipped, from LOG
#
# LOG is the file named by DRAMA_SKIP_LOG while the tests ran: one line per
# skipped suite (package, test, client, why, fix; tab-separated), appended by
# realclient. check is a quick look for the same clients, so that a run that
# will skip says so at its top; the summary is the word of the tests
# themselves. check prints nothing when every client is there; summary then
# says no suite was skipped. Both exit 0.
set -uo pipefail
cd "$(dirname "$0")/.."

case ${1:-} in
check)
	missing=()
	if ! command -v node >/dev/null 2>&1; then
		missing+=("node (OpenAI's SDK, Fish Audio's SDK, @huggingface/hub, playwright-core): install Node.js 20 or later, then run (cd scripts && npm ci)")
	else
		for pkg in openai fish-audio @huggingface/hub playwright-core; do
			[ -f "scripts/node_modules/$pkg/package.json" ] || missing+=("$pkg: not in scripts/node_modules: run (cd scripts && npm ci)")
		done
	fi
	command -v /usr/bin/chromium chromium chromium-browser >/dev/null 2>&1 ||
		missing+=("chromium (the page in a browser): install Debian's chromium (apt-get install chromium)")
	command -v /usr/sbin/haproxy haproxy >/dev/null 2>&1 ||
		missing+=("haproxy (two drama serve behind it): install Debian's haproxy (apt-get install haproxy)")
	if ! command -v python3 >/dev/null 2>&1; then
		missing+=("huggingface_hub (python3): install python3")
	elif [ ! -d ../shared/pylib/huggingface_hub ]; then
		missing+=("huggingface_hub: no ../shared/pylib/huggingface_hub: put ../shared beside the checkout")
	fi
	[ ${#missing[@]} -eq 0 ] && exit 0
	if [ "${DRAMA_REAL_CLIENTS:-}" = require ]; then
		echo "make test: not every real client is here, and DRAMA_REAL_CLIENTS=require: the suites that need them will fail:"
	else
		echo "make test: not every real client is here: the suites that need them will be skipped (listed again at the end):"
	fi
	printf '  %s\n' "${missing[@]}"
	;;
summary)
	log=${2:?usage: test-skips.sh summary LOG}
	if [ ! -s "$log" ]; then
		echo
		echo "make test: no suite skipped: every real client was there"
		exit 0
	fi
	missing=$(grep -v -P '^[^\t]*\t[^\t]*\t\(emulation\)\t' "$log")
	emulated=$(grep -P '^[^\t]*\t[^\t]*\t\(emulation\)\t' "$log")
	if [ -n "$missing" ]; then
		n=$(printf '%s\n' "$missing" | wc -l)
		suites=suites
		[ "$n" -eq 1 ] && suites=suite
		echo
		echo "make test: $n $suites skipped: a real client is missing (DRAMA_REAL_CLIENTS=require makes each a failure):"
		printf '%s\n' "$missing" | sort | while IFS=$'\t' read -r pkg test client why fix; do
			printf '  %s %s: %s not available (%s): %s\n' "$pkg" "$test" "$client" "$why" "$fix"
		done
	else
		echo
		echo "make test: no suite skipped: every real client was there"
	fi
	if [ -n "$emulated" ]; then
		n=$(printf '%s\n' "$emulated" | wc -l)
		tests=tests
		[ "$n" -eq 1 ] && tests=test
		echo "make test: $n $tests skipped under emulation, for what the emulator does and a real kernel does not:"
		printf '%s\n' "$emulated" | sort | while IFS=$'\t' read -r pkg test client why fix; do
			printf '  %s %s: %s; %s\n' "$pkg" "$test" "$why" "$fix"
		done
	fi
	;;
*)
	echo "usage: scripts/test-skips.sh check | summary LOG" >&2
	exit 2
	;;
esac
