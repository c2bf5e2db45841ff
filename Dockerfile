# syntax=docker/dockerfile:1
# nodelet's image: the agent (`nodelet agent`), the queue dashboard (`nodelet dashboard`), the
# approver and Redis user controller, and the dedicated container runtime the Helm chart runs next
# to the agent (`containerd --config ...`, with runc and the CNI plugins). One image, so the runtime
# and the agent always come together.
#
# Build:  docker build -t <registry>/nodelet:$(node -p 'require("./package.json").version') .
#
# It is not built in this repository's environment (no container registry to pull the base images
# from, no Docker engine): image/build.sh (`npm run image:build`) builds the same contents there,
# with the same scripts for Node.js and the runtime (image/fetch-node.sh, image/build-runtime.sh, at
# the pins of image/versions.env) and the apt list read from this file; test/image/contents.test.ts
# compares the two, and test/integration/helm-chart.test.ts pins what the chart relies on.
#
# Base images are pinned by digest (the digests are those public builds resolved these tags to; they
# were not pulled here, where no registry is reachable): a tag that moves changes nothing until the
# digest is changed here.
ARG GO_IMAGE=golang:1.26-bookworm@sha256:a688600ca24f8a4d3ca77f95b0dd40704a9fc787c826660eb7ba0b641b8b175d
ARG NODE_BUILD_IMAGE=node:24-bookworm-slim@sha256:ba849c60be29959425b8734d57b8b4b7d56f98edd9504c9af091d5281095a71e
ARG DEBIAN_IMAGE=debian:bookworm-slim@sha256:3783cc01769c7b2b1b83a5c5ad96c815348e28ed7da68e2e3687004faa906251

# --- runtime-build: containerd and runc from their Go modules -----------------------------------
FROM ${GO_IMAGE} AS runtime-build
COPY image/versions.env image/build-runtime.sh /src/image/
RUN bash /src/image/build-runtime.sh /out/bin

# --- build: compile TypeScript to dist/, fetch the pinned Node.js --------------------------------
FROM ${NODE_BUILD_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
# Exactly the lock (npm ci refuses a lock out of sync with package.json).
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY cmd ./cmd
COPY server ./server
COPY controllers ./controllers
COPY reconcilers ./reconcilers
COPY cri ./cri
COPY kube ./kube
COPY dashboard ./dashboard
COPY approver ./approver
COPY queue-users ./queue-users
COPY util ./util
RUN npm run build
# The runtime's Node.js: the official binary of image/versions.env's NODE_VERSION, integrity-checked.
COPY image/versions.env image/fetch-node.sh ./image/
RUN bash image/fetch-node.sh /node
# Production dependencies only, exactly the lock's, installed here so the runtime has no npm.
# TypeScript comes along as valibot's optional peer (devOptional in the lock, which --omit=dev
# keeps); nothing loads it at run time, and the image carries no build tools.
RUN rm -rf node_modules && npm ci --omit=dev --no-audit --no-fund \
 && rm -rf node_modules/typescript node_modules/.bin/tsc node_modules/.bin/tsserver

# --- runtime ---------------------------------------------------------------------------------------
# Debian 12 with the CNI plugins; node, containerd and runc in /usr/local from the stages above.
FROM ${DEBIAN_IMAGE}
# containernetworking-plugins: the bridge, host-local, portmap and loopback plugins in /usr/lib/cni;
# iptables: what the bridge and portmap plugins call (a dependency of the plugins anyway, named so
# the image lists it); ca-certificates: TLS to registries and to an external rediss:// Redis;
# redis-server: the chart's internal Redis and each node's own queue Redis in the redis.mode sidecar
# (with redis-cli, from redis-tools, for its probe).
RUN apt-get update \
 && apt-get install -y --no-install-recommends containernetworking-plugins iptables ca-certificates redis-server \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /node/ /usr/local/
COPY --from=runtime-build /out/bin/ /usr/local/bin/
# The shim's path in the bundles of containers started by earlier releases (Debian's containerd):
# containerd loads a running container's shim from the path its bundle records (image/build.sh).
RUN ln -s /usr/local/bin/containerd-shim-runc-v2 /usr/bin/containerd-shim-runc-v2
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
COPY --from=build /src/node_modules ./node_modules
COPY bin ./bin
COPY --from=build /src/dist ./dist
# The CRI client loads the proto at run time, from ../../cri/api.proto relative to dist/cri/.
COPY cri/api.proto ./cri/api.proto
# The kubelet plugin APIs (device plugins, plugin registration, pod resources), from ../../controllers/plugins/protos/ relative to dist/controllers/plugins/.
COPY controllers/plugins/protos ./controllers/plugins/protos
# A young generation of 2 MiB semi-spaces (V8's default grows to 16 MiB): about 40 MiB less
# resident memory for the same CPU ("Agent CPU and memory" in docs/benchmarks.md).
ENTRYPOINT ["node", "--max-semi-space-size=2", "bin/nodelet.js"]
