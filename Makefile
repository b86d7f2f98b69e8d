# The README's two commands: `make test` and `make demo`. Everything they need is
# installed from here, into .venv and ~/.cache, so a fresh machine needs nothing else.
# `make check` is the quick one after every change: it needs the venv alone.
SHELL := /bin/bash
# Python writes its bytecode caches (__pycache__, git-ignored) in every run from here, even
# where the environment says not to: without them each process compiled our modules again
# and pytest rewrote every test module at each collection (collecting all the tests took
# 14.5-16.0 CPU-s without the caches and 6.3-7.0 with them, 2026-12-07), in each lane, each
# Airflow process and each `make check`.
unexport PYTHONDONTWRITEBYTECODE
VENV := .venv
PY := $(VENV)/bin/python
# The venv follows pyproject.toml within testenv/constraints.txt (Airflow 3.3.2 and the rest,
# pinned): a fresh unconstrained resolve backtracked for over 20 minutes.
CONSTRAINTS := testenv/constraints.txt
# The stamp's name holds the inputs' digest, so it has no prerequisites: by file times, a git
# worktree sharing this venv (a fresh checkout, newer files) re-installed the package from the
# worktree, and once the worktree went the venv's sparkk8s-submit pointed nowhere.
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml $(CONSTRAINTS) | md5sum | cut -c1-8)

.PHONY: check chaos bench-triggerer postgres venv constraints lint test-deps controlplane hadoop-aws node-packages realnode-images spark-plane screenshots conf-keys gcs-connector hadoop-azure toxiproxy tinyproxy s3server gcs-server azurite kueue statsd-exporter browser test demo parity-refresh bench clean

$(STAMP):
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c $(CONSTRAINTS) -e '.[test]'
	touch $@

venv: $(STAMP)

# Re-resolves '.[test]' from scratch in a scratch venv and pins the result (slow: minutes).
constraints:
	rm -rf .venv-resolve && python3 -m venv .venv-resolve
	.venv-resolve/bin/pip install -q --upgrade pip
	.venv-resolve/bin/pip install -q -e '.[test]'
	{ sed -n '1,/^# Regenerate/p' $(CONSTRAINTS); .venv-resolve/bin/pip freeze --exclude-editable | grep -v '^-e '; } > $(CONSTRAINTS).new
	mv $(CONSTRAINTS).new $(CONSTRAINTS) && rm -rf .venv-resolve

# The plane's binaries, the real node's kubelet and pause, and Kueue's manager, in one
# `go build` (testenv/build.sh).
controlplane:
	./testenv/build.sh

# The real node's Debian packages (containerd, runc, CNI plugins, dnsmasq, iptables),
# downloaded and unpacked into ~/.cache, never installed into the system (9 s cold, once).
node-packages:
	./testenv/install_node_packages.sh >/dev/null

# The real node's OCI images (pause, shell, and spark:<v> for 4.3.0, 3.5.9, 4.0.5, 4.1.4 and
# 4.2.1) from local files, as docker-archive tars under ~/.cache/sparkk8s-realnode, keyed by
# their inputs (each Spark one 0.6-0.8 GB, built in 12-20 s cold at load 12, once).
realnode-images: venv controlplane
	$(PY) -m testenv.realnode.image --all >/dev/null

# The fault tests' TCP proxy, built from its Go module into ~/.cache (about a minute, once).
toxiproxy:
	./testenv/build_toxiproxy.sh >/dev/null

# versitygw, the S3-compatible server of the upload tests (cached under ~/.cache).
# Debian's tinyproxy (a real HTTP CONNECT proxy) for the proxy tests, unpacked into ~/.cache.
tinyproxy:
	./testenv/install_tinyproxy.sh >/dev/null

s3server:
	./testenv/build_s3.sh >/dev/null

# fake-gcs-server, the GCS emulator of the gs:// upload tests, from its Go module at a pinned
# release into ~/.cache (measured: 4 min 53 s cold at load 11-16 on 2 cores, 34 MB; 0.05 s warm).
gcs-server:
	./testenv/build_gcs.sh >/dev/null

# Azurite, the Azure Blob emulator of the abfs:// upload tests, from the npm registry at a
# pinned release into ~/.cache (measured: 45 s cold, 186 MB, 374 packages; 0.04 s warm).
azurite:
	./testenv/install_azurite.sh >/dev/null

# Kueue's manager (the quota tests' admission controller) at the release testenv/go.mod pins,
# built in the plane's `go build` (testenv/build.sh), and its CRDs, into ~/.cache.
kueue: controlplane
	./testenv/build_kueue.sh >/dev/null

# Prometheus' statsd_exporter (the metrics tests' StatsD server) from its Go module at a pinned
# release into ~/.cache (about 40 s cold on two cores, once).
statsd-exporter:
	./testenv/build_statsd_exporter.sh >/dev/null

# Debian's postgresql for Airflow with two triggerers (the failover tests of `make test`, the
# chaos run); no-op once present.
postgres:
	./testenv/install_postgres.sh >/dev/null

# Debian's chromium and playwright-core for the Connections UI test; no-op once present.
browser:
	./tests/e2e/install_browser.sh

# ruff (lint + format) and mypy, with the config in pyproject.toml. mypy's cache lives in
# ~/.cache, one per checkout (checkouts hold different files and venvs, so a shared cache
# would be rewritten by each and serialise them); the lock is that checkout's own.
LINT_PATHS := airflow_provider_sparkk8s testenv tests benchmarks demo dags
MYPY_CACHE := $(HOME)/.cache/sparkk8s-mypy/$(shell echo $(CURDIR) | md5sum | cut -c1-12)
lint: venv
	$(VENV)/bin/ruff check $(LINT_PATHS)
	$(VENV)/bin/ruff format --check $(LINT_PATHS)
	mkdir -p $(MYPY_CACHE)
	flock $(MYPY_CACHE).lock $(VENV)/bin/mypy --cache-dir $(MYPY_CACHE) $(LINT_PATHS)

# The quick check after every change: `lint`, then every test that needs no server
# (--tier=check, tests/support/tiers.py: a test whose fixtures start a server or that carries
# the controlplane, airflow or server marker is left out). It needs the venv alone: nothing is
# built, installed or started. TESTS narrows it (make check TESTS=tests/submission); pytest's
# exit 5 ("no tests collected") fails it as `make test`'s does.
check: lint
	$(PY) -m pytest -q -p no:cacheprovider --tier=check $(TESTS); \
	rc=$$?; if [ $$rc -eq 5 ]; then echo "make check: no tests were collected" >&2; fi; \
	exit $$rc

# The S3A connector of each real-Spark line (hadoop-aws at the version of the line's
# hadoop-client-api jar, and the AWS SDK modules it loads: 11-18 MB a Hadoop release) through
# Maven into ~/.cache (testenv/fetch_hadoop_aws.sh; 70 MB of downloads and 60 MB of jars for
# the four Hadoop releases, 232 s cold at load 11-15 on 2 cores, 0.2 s warm).
hadoop-aws: venv
	$(PY) -m testenv.hadoop_aws --all >/dev/null

# The GCS connector of each real-Spark line (gcs-connector's shaded jar, at the release line
# built for the line's Hadoop: testenv/gcs_connector.py) through Maven into ~/.cache
# (testenv/fetch_gcs_connector.sh; two releases, 38 and 41 MB).
gcs-connector: venv
	$(PY) -m testenv.gcs_connector --all >/dev/null

# The Azure connector of each real-Spark line (hadoop-azure at the version of the line's
# hadoop-client-api jar, and what it needs at run time: azure-storage for WASB, jetty-util-ajax
# on 3.3/3.4, wildfly-openssl, ...) through Maven into ~/.cache (testenv/fetch_hadoop_azure.sh;
# 7-11 MB a Hadoop release, of which 2.0-5.8 MB are added to an image beside hadoop-aws; 7-12 s
# a release cold at load 18, with Maven's repository already holding the other connectors).
hadoop-azure: venv
	$(PY) -m testenv.hadoop_azure --all >/dev/null

# The real node's Spark image trees: pyspark 4.3.0, 4.2.1, 4.1.4, 4.0.5 and 3.5.9 (the parity
# oracle's cached installs) laid out as Spark images with our entrypoint and programs, under ~/.cache; no-op
# once present; their jars include the S3A, Azure and GCS connectors. `make demo` builds only its
# own (4.3.0) when it starts.
runtime-image: venv hadoop-aws hadoop-azure gcs-connector
	$(PY) -m testenv.runtime_image --all >/dev/null

# pytest's exit 5 ("no tests collected") fails the recipe like any other non-zero exit.
# TESTS narrows the run (make test TESTS=tests/controlplane); CI runs them all.
# The full run (TESTS=tests) also runs tests/compat/suite.txt on the lowest Airflow minor
# we declare (AIRFLOW_COMPAT, latest patch), in a second venv built by
# tests/compat/airflow_venv.sh (cached in ~/.cache/sparkk8s-airflow). Another minor:
# make test-compat AIRFLOW_COMPAT=3.2.2
# The full run goes in two lanes at once (tests/run_lanes.sh): tests/e2e, tests/realnode and
# tests/runtime (one real node); every other test, with the compatibility suite beside it.
TESTS ?= tests
AIRFLOW_COMPAT ?= 3.0.6
COMPAT_VENV = .venv-af$(subst .,,$(AIRFLOW_COMPAT))
# What the full run needs, built and fetched side by side (make -j4): on a cold machine the Go
# builds keep the two cores busy while the venv's pip install, Maven, npm, pip's layer and the
# Go module downloads wait on the network (the Go builds need no venv, so they start at once).
# The steps that use apt run one after another (order-only prerequisites): apt-get update
# takes a lock the others would fail on.
TEST_DEPS := venv lint controlplane node-packages toxiproxy tinyproxy s3server gcs-server azurite kueue statsd-exporter browser postgres runtime-image realnode-images
test-deps: $(TEST_DEPS)
tinyproxy: | node-packages
browser: | tinyproxy
# The two-triggerer tests (tests/failover/test_triggerer_failover.py, rest lane) need PostgreSQL.
postgres: | browser
test:
	$(MAKE) --no-print-directory -j4 --output-sync=target test-deps
	bin=$$(./testenv/build.sh) && s3=$$(./testenv/build_s3.sh) && \
	kueue=$$(./testenv/build_kueue.sh) && gcs=$$(./testenv/build_gcs.sh) && \
	azurite=$$(./testenv/install_azurite.sh) && \
	export SPARKK8S_TESTENV_BIN=$$bin SPARKK8S_S3_SERVER_BIN=$$s3 SPARKK8S_KUEUE_DIR=$$kueue && \
	export SPARKK8S_GCS_SERVER_BIN=$$gcs SPARKK8S_AZURITE_BLOB_JS=$$azurite && \
	if [ "$(TESTS)" = tests ]; then \
		./tests/run_lanes.sh $(PY) "$(MAKE) --no-print-directory test-compat"; \
	else \
		$(PY) -m pytest -q -p no:cacheprovider $(TESTS); \
		rc=$$?; if [ $$rc -eq 5 ]; then echo "make test: no tests were collected" >&2; fi; \
		exit $$rc; \
	fi

# The Connections UI's and the Spark UI's screenshots in docs/screenshots/, refreshed on
# request: the browser tests write them to their temp dirs in `make test`, here over the
# docs' copies (commit them). The Spark UI's come from a live driver on the real node.
screenshots: venv controlplane browser realnode-images
	SPARKK8S_SCREENSHOT_DIR=$(CURDIR)/docs/screenshots SPARKK8S_TESTENV_BIN=$$(./testenv/build.sh) \
		$(PY) -m pytest -q -p no:cacheprovider tests/e2e/test_connections_ui.py
	SPARKK8S_SCREENSHOT_DIR=$(CURDIR)/docs/screenshots SPARKK8S_TESTENV_BIN=$$(./testenv/build.sh) \
		$(PY) -m pytest -q -p no:cacheprovider tests/e2e/test_spark_ui_airflow.py

test-compat: controlplane
	py=$$(tests/compat/airflow_venv.sh $(AIRFLOW_COMPAT) $(COMPAT_VENV)) && \
	echo "make test-compat: Airflow $(AIRFLOW_COMPAT)" && \
	SPARKK8S_TESTENV_BIN=$$(./testenv/build.sh) $$py -m pytest -q -p no:cacheprovider \
		$$(grep -v '^#' tests/compat/suite.txt)

# The plane `make demo` runs on, alone: the real node (the kubelet, containerd and runc),
# the Spark 4.3.0 image, docs/rbac.yaml applied to the namespace `spark`; prints the submitter's
# kubeconfig and runs until Ctrl-C (testenv/spark_plane.py; `--help` for its options).
spark-plane: venv controlplane node-packages
	SPARKK8S_TESTENV_BIN=$$(./testenv/build.sh) $(PY) -m testenv.spark_plane

# `make demo`: the example DAG through Airflow on the real node (the kubelet built by
# `controlplane`, the Debian packages of `node-packages`); its Spark 4.3.0 image is built from
# pyspark when the demo starts, unless cached (the other lines' images are not needed).
demo: venv controlplane node-packages
	SPARKK8S_TESTENV_BIN=$$(./testenv/build.sh) $(PY) -m demo

# The conf keys each Spark line defines (the typo warnings' "did you mean"), read from the
# spark-*.jar files of the parity oracle's pyspark installs into
# airflow_provider_sparkk8s/submission/defined_conf_keys.py (commit it; a few minutes).
conf-keys: venv
	./tests/parity/install_spark.sh
	$(PY) -m testenv.spark_conf_keys

# Real spark-submit (pyspark 4.3.0 and 3.5.9, in ~/.cache/sparkk8s-parity) re-captures the
# parity goldens; `make test` compares against the stored ones without a JVM.
parity-refresh: venv
	./tests/parity/install_spark.sh
	$(PY) -m tests.parity.runner

bench: venv controlplane
	./tests/parity/install_spark.sh 4.3.0
	# An installed wheel is byte-compiled by pip; the editable checkout is not (and
	# PYTHONDONTWRITEBYTECODE may be set), so compile it as an install would.
	$(PY) -m compileall -q airflow_provider_sparkk8s
	SPARKK8S_TESTENV_BIN=$$(./testenv/build.sh) $(PY) -m benchmarks.bench_submit

# One real Airflow triggerer on PostgreSQL following N deferred tasks of ours, N worker-free
# tasks of ours (start_from_trigger=True: no task process), then as many of the peer's
# (KubernetesPodOperator, deferrable; its provider pip-installed with --target into
# ~/.cache/sparkk8s-bench, not into the venv): benchmarks/bench_real_triggerer.py. Not in CI.
# BENCH_TRIGGERER_FLAGS=--until-short with BENCH_TRIGGERER_APPS=1000,2000,3000,4000 steps N
# until a peer's first run that stops short: the largest N one triggerer holds.
BENCH_TRIGGERER_APPS ?= 1000,3000
BENCH_TRIGGERER_PEERS ?= ours,worker-free,kpo
BENCH_TRIGGERER_FLAGS ?=
bench-triggerer: venv controlplane postgres
	SPARKK8S_TESTENV_BIN=$$(./testenv/build.sh) $(PY) -m benchmarks.bench_real_triggerer \
		--apps $(BENCH_TRIGGERER_APPS) --peers $(BENCH_TRIGGERER_PEERS) $(BENCH_TRIGGERER_FLAGS)

# The heavy runs: two Airflow triggerers on PostgreSQL with one SIGKILLed, the fault table
# with 1,000 applications per fault (about 15 minutes), and
# the scale table at 1k, 3k (2 executor pods each) and 10k applications beside
# KubernetesPodTrigger at the largest N it follows (installed unpinned, as docs/benchmarks.md says).
chaos: venv controlplane toxiproxy postgres
	SPARKK8S_CHAOS=1 SPARKK8S_TESTENV_BIN=$$(./testenv/build.sh) $(PY) -m pytest -q -p no:cacheprovider tests/chaos
	SPARKK8S_TESTENV_BIN=$$(./testenv/build.sh) $(PY) -m benchmarks.bench_faults
	$(PY) -c 'import airflow.providers.cncf.kubernetes' 2>/dev/null || $(VENV)/bin/pip install -q --no-deps apache-airflow-providers-cncf-kubernetes kubernetes_asyncio aiofiles
	SPARKK8S_TESTENV_BIN=$$(./testenv/build.sh) $(PY) -m benchmarks.bench_trigger --scale 1000,3000,10000 --executors-at 3000 --kpt-apps 200 --changes-per-second 50 --deadline 900

clean:
	rm -rf $(VENV) .venv-af* .airflow
