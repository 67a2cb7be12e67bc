# The two commands a new user needs: `make demo` and `make test`. Everything else is a step of them.
SHELL := /bin/bash
VENV := $(CURDIR)/.venv
# The machine's own Python, not the venv's: make demo builds the images while the venv is being made (its python3
# has no pip until then), and scripts/images.sh fetches the training image's wheels with it.
HOST_PYTHON := $(shell command -v python3)
export PATH := $(VENV)/bin:$(PATH)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
PLAYBOOK := ansible-playbook
LAUNCHER ?= torchrun
# Slurm runs the ranks on the hosts (cluster_runtime=host) and needs Slurm on the nodes (cluster_scheduler=slurm).
RUNTIME ?= $(if $(filter slurm,$(LAUNCHER)),host,container)
SCHEDULER ?= $(if $(filter slurm,$(LAUNCHER)),slurm,none)
# Launchers that need an image variant (images/training-<variant>/), built only when asked for.
VARIANTS ?= $(filter deepspeed tensorflow,$(LAUNCHER)) $(if $(filter horovodrun,$(LAUNCHER)),horovod) \
	$(if $(filter ipexrun,$(LAUNCHER)),ipex)
# The training code: the collection's PyTorch example, or for TensorFlow its Keras example.
WORKLOAD ?= $(if $(filter tensorflow,$(LAUNCHER)),$(CURDIR)/examples/tensorflow_mnist)
IMAGE_CACHE := $(or $(MULTINODE_CACHE),$(HOME)/.cache/multinode-training)/images
# The image's tarball (the training image's 1.6 GB, a variant's up to 8 GB) is loaded by each node from the image
# cache, which the simulated nodes see read-only at the same path (shared storage), instead of being copied to each
# node first.
IMAGE_VARS := -e container_runtime_tarball_on_nodes=true $(foreach variant,$(VARIANTS), \
	-e cluster_image=multinode/training-$(variant):latest \
	-e container_runtime_image_tarball=$(IMAGE_CACHE)/multinode_training-$(variant)_latest.tar)
SIM_VARS := -e '{"sim_cluster_node_mounts": [{"type": "bind", "source": "$(IMAGE_CACHE)", "target": "$(IMAGE_CACHE)", \
	"read_only": true}]}'

.DEFAULT_GOAL := demo
.PHONY: help demo test unit lint sanity shellcheck molecule molecule-roles molecule-newcomer molecule-hosts browser molecule-deepspeed molecule-tensorflow molecule-horovod molecule-ipex venv venv-dev host images own-image wheels sim train down clean

help: ## this list of targets
	@awk -F':.*## ' '/^[a-z-]+:.*## /{printf "  %-20s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

# The steps in turn (each a target below), timed; the times are printed at the end. Steps joined by + run side by
# side: the venv does not need the Docker engine or the images, nor they the venv.
DEMO_STEPS := venv+images sim train
demo: ## bare simulated nodes -> trained model, then per step its time, the bytes it downloaded and wrote, and their rates
	@python3 scripts/timed_steps.py $(DEMO_STEPS) -- $(VENV)/bin/multinode-training show latest

# The whole suite, side by side where nothing meets (scripts/side_by_side.sh): the end-to-end scenarios on sim
# clusters of their own (default: containers; hosts: first the newcomer's bare Debian 12/13 nodes, then host mode and
# Slurm), beside them, niced, the unit tests, lint, sanity and then the role scenarios. The newcomer runs first, while
# default provisions: its image copies, run later, took the CPU from default's cut-CPU health drill (no straggler). VARIANTS (e.g. make test VARIANTS=ipex) runs those image variants' stack
# scenarios after the rest, one after another.
test: venv-dev host browser images wheels shellcheck ## the whole suite (.ci/run calls this), each part timed
	scripts/side_by_side.sh 'default=molecule test -s default' \
		'hosts=$(MAKE) -k --no-print-directory molecule-newcomer molecule-hosts' \
		'checks~=$(MAKE) -k --no-print-directory unit lint sanity molecule-roles' \
		$(foreach variant,$(VARIANTS),-- '$(variant)=molecule test -s $(variant)')

venv: $(VENV)/.installed ## .venv with what running the collection needs (requirements.txt), its collections (requirements.yml) and the Python package
$(VENV)/.installed: requirements.txt requirements.yml pyproject.toml
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -r requirements.txt
	$(VENV)/bin/pip install -q -e .
	$(VENV)/bin/python scripts/install_collections.py
	touch $@

venv-dev: $(VENV)/.installed-dev ## the venv plus the test and development tools (requirements-dev.txt)
$(VENV)/.installed-dev: $(VENV)/.installed requirements-dev.txt
	$(VENV)/bin/pip install -q -r requirements-dev.txt
	touch $@

host: ## Docker engine running, debootstrap present
	scripts/host-setup.sh

browser: ## Chromium, in which the unit tests open a run's report.html headless (not needed by the demo)
	scripts/host-setup.sh browser

shellcheck: ## ShellCheck, with which make lint checks every script the collection generates (not needed by the demo)
	scripts/host-setup.sh shellcheck

images: host ## base, sim-node and training images (cached on disk); VARIANTS=deepspeed adds that variant
	PYTHON=$(HOST_PYTHON) scripts/images.sh $(VARIANTS)

own-image: venv images ## your own image FROM the training image with REQUIREMENTS' packages: make own-image NAME=team/img:1 REQUIREMENTS=path
	$(VENV)/bin/python scripts/own_image.py --name $(NAME) --requirements $(REQUIREMENTS) --cache $(IMAGE_CACHE)

wheels: venv ## Intel's runtimes from PyPI for the oneapi role's pip method (cached on disk)
	PYTHON=$(VENV)/bin/python scripts/oneapi-wheels.sh

# NODES node containers, the last SPARES of them in the inventory's spares group (launcher_lost_node: spare).
NODES ?= 3
SPARES ?= 0
sim: venv images ## create the simulated cluster and inventories/sim (NODES=4 SPARES=1: a spare node)
	$(PLAYBOOK) harness/sim_cluster.yml $(SIM_VARS) -e sim_cluster_nodes=$(NODES) -e sim_cluster_spares=$(SPARES)

train: venv $(if $(filter host,$(RUNTIME)),wheels) ## provision the inventory's nodes and run the training job
	$(PLAYBOOK) playbooks/train.yml -i inventories/sim -e launcher_type=$(LAUNCHER) -e cluster_runtime=$(RUNTIME) \
		-e cluster_scheduler=$(SCHEDULER) $(IMAGE_VARS) $(if $(WORKLOAD),-e workload_src=$(WORKLOAD))

unit: venv-dev browser shellcheck ## ansible-test units: every unit test, the collection staged where ansible-test wants it
	scripts/ansible_test.sh units

lint: venv-dev shellcheck ## ansible-lint (production profile); the role READMEs' variable tables and the docs' summary key and launcher tables match the code; changelog fragments; ShellCheck on every generated script
	ansible-lint --profile production
	python scripts/role_docs.py --check
	python scripts/generated_docs.py --check
	antsibull-changelog lint
	python scripts/shellcheck_generated.py

sanity: venv-dev ## ansible-test sanity on the collection as ansible-galaxy builds it
	scripts/ansible_test.sh sanity

E2E_SCENARIOS := default hosts
ROLE_SCENARIOS := oneapi gpu_drivers container_runtime
molecule: venv-dev host images wheels ## every scenario of make test: the end-to-end ones side by side, then the role ones, then the newcomer's
	scripts/side_by_side.sh $(foreach scenario,$(E2E_SCENARIOS),'$(scenario)=molecule test -s $(scenario)') -- \
		$(foreach scenario,$(ROLE_SCENARIOS),'$(scenario)=molecule test -s $(scenario)')
	$(MAKE) --no-print-directory molecule-newcomer

molecule-roles: venv-dev host ## the role scenarios side by side (their own containers, networks and subnets)
	scripts/side_by_side.sh $(foreach scenario,$(ROLE_SCENARIOS),'$(scenario)=molecule test -s $(scenario)')

molecule-newcomer: venv-dev host images wheels ## the README's inventory and commands, read out of README.md, on bare Debian 12 and 13 nodes
	scripts/images.sh trixie
	molecule test -s newcomer

molecule-hosts: venv-dev host images wheels ## host mode and Slurm on a sim cluster of their own (MULTINODE_SLOW_DRILLS=1 adds the mode switch and the Slurm killed rank)
	molecule test -s hosts

molecule-deepspeed: venv-dev host ## opt-in: DeepSpeed ZeRO-2 across 3 sim nodes in the DeepSpeed image variant
	scripts/images.sh deepspeed
	molecule test -s deepspeed

molecule-tensorflow: venv-dev host ## opt-in: Keras digits with MultiWorkerMirroredStrategy across 3 sim nodes (TensorFlow variant)
	scripts/images.sh tensorflow
	molecule test -s tensorflow

molecule-horovod: venv-dev host ## opt-in: Horovod (horovodrun, Gloo) across 3 sim nodes in the Horovod variant (builds 9 min)
	scripts/images.sh horovod
	molecule test -s horovod

molecule-ipex: venv-dev host ## opt-in: ipexrun (Intel Extension for PyTorch 2.8, legacy) across 3 sim nodes in the IPEX variant (8 GB)
	scripts/images.sh ipex
	molecule test -s ipex

down: venv ## remove the simulated cluster (nodes, network, their Docker volumes)
	$(PLAYBOOK) harness/sim_teardown.yml

clean: down
	rm -rf runs
