# Isthmus. The two commands: `make demo` and `make test`. Both set up what they need first.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
MVN    := mvn -B -q -gs devstack/maven-settings.xml -f devstack/pom.xml
export PATH := $(CURDIR)/bin:$(CURDIR)/$(VENV)/bin:$(PATH)
# ISTHMUS_DB=postgres: the stack's database is a PostgreSQL the devstack runs (docs/running.md, "The
# database"); unset, it is SQLite in var/.
export ISTHMUS_DB
WANT_POSTGRES := $(filter postgres,$(ISTHMUS_DB))$(if $(filter 2,$(ISTHMUS_DEVSTACK_HOSTS)),postgres)
# What `make test` runs on PostgreSQL: the fast tier (tests/unit, tests/db: no cluster), measured
# by coverage.py, and the integration tests of what the database itself decides (concurrent
# writes racing for one object, a burst of API calls) and of its devstack part. Each test runs
# once: the Kafka tier on SQLite leaves these out.
POSTGRES_ONLY := tests/integration/test_races.py tests/integration/test_api_burst.py \
	tests/integration/test_devstack.py
POSTGRES_TESTS := tests/unit tests/db $(POSTGRES_ONLY)
# Swagger UI, which draws the console's API reference page (/api/) from its OpenAPI document:
# npm's swagger-ui-dist at a pinned version, its package checked against the sha256 below and
# served by the console itself, so the page needs no network at run time. A new version: change
# both lines (sha256sum of the .tgz that `npm pack swagger-ui-dist@<version>` writes).
SWAGGER_UI        := 5.35.0
SWAGGER_UI_SHA256 := 1b8e891893404ea4c3558b6a87e2a3e494e7eedba41168c2ece5800a391a6ea6
SWAGGER_UI_DIR    := console/static/vendor/swagger-ui
# Kroxylicious, the gateways' proxy, ready to run (its rule is below).
KROXYLICIOUS := .cache/jars/kroxylicious/launcher/.built

.PHONY: help setup setup-postgres system-packages demo down status test test-postgres \
	test-faults test-ha lint format bench soak docs

help:
	@echo "make demo    set up, start the embedded stack and the console on http://127.0.0.1:8000"
	@echo "make test    set up and run the tests (starts the clusters if they are not running):"
	@echo "             the Kafka tier on SQLite, the fast tier on PostgreSQL (make test-postgres)"
	@echo "make test-faults  the fault tests on three-broker clusters (a stack of their own)"
	@echo "make test-ha      the high-availability tests: parts killed and replaced (a stack of their own)"
	@echo "make down    stop everything 'make demo' started"
	@echo "make status  show each part of the stack"

setup: system-packages $(VENV)/.installed .cache/jars/kafka/.fetched $(KROXYLICIOUS) .cache/bin/schema-registry \
	$(SWAGGER_UI_DIR)/.fetched-$(SWAGGER_UI) $(if $(WANT_POSTGRES),setup-postgres)
	@$(PY) manage.py init_var -v 0

# Debian packages the stack and its tests need (docker-compose: a client that checks the compose
# file, no engine), installed only when missing.
system-packages:
	@missing=""; \
	$(PYTHON) -c 'import ensurepip, venv' 2>/dev/null || missing="$$missing python3-venv"; \
	command -v java >/dev/null         || missing="$$missing openjdk-17-jre-headless"; \
	command -v mvn >/dev/null          || missing="$$missing maven"; \
	command -v javac >/dev/null        || missing="$$missing openjdk-17-jdk-headless"; \
	command -v redis-server >/dev/null || missing="$$missing redis-server"; \
	command -v redis-sentinel >/dev/null || missing="$$missing redis-sentinel"; \
	[ -x /usr/bin/chromium ]           || missing="$$missing chromium"; \
	command -v npm >/dev/null          || missing="$$missing npm"; \
	command -v promtool >/dev/null     || missing="$$missing prometheus"; \
	command -v docker-compose >/dev/null || docker compose version >/dev/null 2>&1 \
	                                   || missing="$$missing docker-compose"; \
	if [ -n "$$missing" ]; then \
	  echo "Installing Debian packages:$$missing"; \
	  $(SUDO) apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

# PostgreSQL (Debian's package, installed only when missing) and its driver (the `postgres`
# extra), for ISTHMUS_DB=postgres and the tests' PostgreSQL run.
setup-postgres: system-packages $(VENV)/.installed-postgres
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { \
	  echo "Installing Debian packages: postgresql"; \
	  $(SUDO) apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y -qq --no-install-recommends postgresql >/dev/null; \
	}

$(VENV)/.installed-postgres: $(VENV)/.installed
	$(PY) -m pip install -q -e '.[dev,postgres]'
	touch $@

$(VENV)/.installed: pyproject.toml
	@# A venv left half-made by an earlier failure has no working pip: start it over.
	$(PY) -m pip --version >/dev/null 2>&1 || { rm -rf $(VENV) && $(PYTHON) -m venv $(VENV); }
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $@

# Swagger UI (SWAGGER_UI above), unpacked into console/static/vendor/ (not in git).
$(SWAGGER_UI_DIR)/.fetched-$(SWAGGER_UI):
	rm -rf $(SWAGGER_UI_DIR) .cache/swagger-ui && mkdir -p $(SWAGGER_UI_DIR) .cache/swagger-ui
	cd .cache/swagger-ui && npm pack --silent swagger-ui-dist@$(SWAGGER_UI) >/dev/null
	@echo "$(SWAGGER_UI_SHA256)  .cache/swagger-ui/swagger-ui-dist-$(SWAGGER_UI).tgz" | sha256sum -c --quiet \
	  || { echo "swagger-ui-dist $(SWAGGER_UI) from npm is not the package pinned here (sha256)."; exit 1; }
	tar xzf .cache/swagger-ui/swagger-ui-dist-$(SWAGGER_UI).tgz -C $(SWAGGER_UI_DIR) --strip-components=1 \
	  package/swagger-ui-bundle.js package/swagger-ui.css package/LICENSE package/NOTICE
	rm -rf .cache/swagger-ui
	touch $@

# Apache Kafka 4.x (broker, tools, MirrorMaker 2), from Maven Central.
.cache/jars/%/.fetched: devstack/pom.xml devstack/maven-settings.xml
	rm -rf .cache/jars/$*
	$(MVN) -P $* dependency:copy-dependencies -DoutputDirectory=../.cache/jars/$*
	touch $@

# Kroxylicious, the gateways' Kafka proxy (docs/gateways.md): its runtime from Maven Central
# (the pattern above, profile kroxylicious) and devstack/kroxylicious/, its main class and a
# plugin that keeps its ports on loopback, compiled beside the jars.
$(KROXYLICIOUS): .cache/jars/kroxylicious/.fetched devstack/build-kroxylicious.sh \
		$(shell find devstack/kroxylicious -type f)
	devstack/build-kroxylicious.sh .cache/jars/kroxylicious

# The stack's schema registries: AxonOps Schema Registry (Go), built from the Go module proxy
# at the version devstack/go/go.mod pins (devstack/registry.py says why this one).
.cache/bin/schema-registry: devstack/go/go.mod devstack/go/go.sum
	@command -v go >/dev/null || { echo "Building the schema registry needs Go 1.26 or later" \
	  "(https://go.dev/doc/install); then run make again."; exit 1; }
	cd devstack/go && GOTOOLCHAIN=local GOFLAGS=-mod=readonly go build -trimpath \
	  -o $(CURDIR)/$@ github.com/axonops/axonops-schema-registry/cmd/schema-registry

demo: setup
	$(if $(WANT_POSTGRES),$(PY) manage.py devstack up postgres)
	$(PY) manage.py migrate --noinput -v 0
	$(PY) manage.py devstack up
	$(PY) manage.py setup_demo
	@echo
	@echo "Isthmus console: http://127.0.0.1:8000  (stop everything with: make down)"
	$(if $(filter 2,$(ISTHMUS_DEVSTACK_HOSTS)),@echo "Two hosts: host B's console http://127.0.0.1:8001; kill one whole with: $(PY) manage.py devstack kill-host host-a")

down:
	@[ -x $(PY) ] && $(PY) manage.py devstack down || echo "Nothing to stop: no virtualenv yet."

status:
	$(PY) manage.py devstack status

lint:
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports --no-logo
	$(VENV)/bin/mypy

format:
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

# The documentation site from docs/ into site/ (open site/index.html). --strict: a broken link
# between pages fails it. It needs only the virtualenv's part of `make setup` (mkdocs is a dev
# dependency), not the stack's.
# NO_MKDOCS_2_WARNING: the theme's notice of its end of life (May 2027) at every build, which
# the pinned version prints however quiet the build.
docs: $(VENV)/.installed
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet

# The Kafka tier on SQLite, and beside it the tests that stop shared brokers or Redis (on a
# stack of their own) and, at the lowest priority on the CPU it leaves idle, the fast tier,
# measured by coverage.py, with the database's own integration tests on the devstack's
# PostgreSQL (tests/suite.py).
# `make test-postgres` runs that last part alone.
# The tests' brokers compile with C1 alone (devstack/kafka.py, JVM_OPTIONS): a third less CPU to
# start, and in their first minutes, where the tests' stacks spend their lives.
TEST_BROKERS := ISTHMUS_KAFKA_OPTS=-XX:TieredStopAtLevel=1
# The lint runs beside the stack's start (its half minute of mypy on a clean clone is CPU the
# brokers' start leaves idle); its output comes at the end, and its failure fails the run.
test: setup setup-postgres
	@$(MAKE) --no-print-directory lint > var/lint.log 2>&1 & linting=$$!; \
	$(TEST_BROKERS) ISTHMUS_DB=sqlite $(PY) -m tests.suite --tiers kafka \
		$(addprefix --ignore=,$(POSTGRES_ONLY)) $(addprefix --postgres-beside=,$(POSTGRES_TESTS)); \
	tested=$$?; wait $$linting; linted=$$?; \
	echo; echo "make lint (beside the tests):"; cat var/lint.log; \
	[ $$tested = 0 ] && [ $$linted = 0 ]

test-postgres: setup-postgres
	$(TEST_BROKERS) ISTHMUS_DB=postgres $(PY) -m tests.suite --coverage $(POSTGRES_TESTS)

# Brokers killed and restarted under running mirrors, on two three-broker clusters of their own
# (ports shifted by 2000, state in var/faults-stack/), started and stopped by the session.
FAULTS_ENV := $(TEST_BROKERS) ISTHMUS_DB=sqlite ISTHMUS_DEVSTACK_BROKERS=3 ISTHMUS_DEVSTACK_PORT_OFFSET=2000 \
	ISTHMUS_VAR_DIR=$(CURDIR)/var/faults-stack
test-faults: setup
	$(FAULTS_ENV) $(PY) manage.py init_var -v 0
	$(FAULTS_ENV) $(PY) -m pytest -m faults tests/faults

# The highly available deployment's parts killed and replaced (Redis's master by Sentinel ...),
# on a stack of their own (ports shifted by 5000, state in var/ha-stack/). Not part of `make test`.
HA_ENV := ISTHMUS_DB=sqlite ISTHMUS_DEVSTACK_PORT_OFFSET=5000 ISTHMUS_VAR_DIR=$(CURDIR)/var/ha-stack
test-ha: setup setup-postgres
	$(HA_ENV) $(PY) manage.py init_var -v 0
	$(HA_ENV) $(PY) -m pytest -m ha tests/ha

# Half an hour of producers at 5,000 records/s over 3 links while faults are injected at random,
# on the whole stack with three-broker clusters of its own (ports shifted by 3000, state in
# var/soak-stack/), ending with every mirror verified; writes the soak's section of
# docs/benchmarks.md. Not part of `make test`. Quick try: make soak SOAK_ARGS="--minutes 3"
SOAK_ENV := ISTHMUS_DB=sqlite ISTHMUS_DEVSTACK_BROKERS=3 ISTHMUS_DEVSTACK_PORT_OFFSET=3000 \
	ISTHMUS_VAR_DIR=$(CURDIR)/var/soak-stack
soak: setup
	$(SOAK_ENV) $(PY) manage.py init_var -v 0
	$(SOAK_ENV) $(PY) -m bench.soak $(SOAK_ARGS)

# Catch-up (1 GiB / 8 partitions), 64 topics x 4 partitions, latency at 2,000 and 20,000
# records/s, idle CPU, a new mirror's first record and memory, against MirrorMaker 2 and the raw
# client limit; then consumer offset sync of 1,000 groups over 200 mirror partitions
# (bench.offset_sync, its own section) and the list pages with 50 links and 1,000 mirrors
# (bench.list_pages, its own section) and a failback of 1 GiB against a full re-copy
# (bench.failback, its own section) and links in one engine against MirrorMaker 2's flows
# (bench.link_scale, its own section) and a failover of 1,000 mirrors of a link in one action
# (bench.bulk_failover, its own section) and a merge flow against MirrorMaker 2 (bench.merge_flows,
# its own section) and schema sync of 1,000 subjects (bench.schema_sync, its own section) and a
# cluster of 200 topics x 10 partitions mirrored by prefix (bench.cluster_scale, its own) and a
# gateway's own cost against direct clients (bench.gateway, its own) and the batch path's
# prototype against the record path (bench.batch_path, its own); writes
# docs/benchmarks.md (~30 min on a quiet machine).
# Quick try: make bench BENCH_ARGS="--size-mb 50 --many-size-mb 16 --warmup 5 --measure 10 --idle 10 --no-doc"
# The document again from a run's saved numbers: BENCH_ARGS="--from-results var/bench/results.json"
bench: setup
	$(PY) -m bench.run $(BENCH_ARGS)
	$(PY) -m bench.offset_sync
	$(PY) -m bench.list_pages
	$(PY) -m bench.failback
	$(PY) -m bench.link_scale
	$(PY) -m bench.bulk_failover
	$(PY) -m bench.merge_flows
	$(PY) -m bench.schema_sync
	$(PY) -m bench.cluster_scale
	$(PY) -m bench.gateway
	$(PY) -m bench.batch_path
	$(PY) -m bench.batch_engine
