# syntax=docker/dockerfile:1
# nodelet's image: the agent (`nodelet agent`), the queue dashboard (`nodelet dashboard`) and the
# dedicated container runtime the Helm chart runs next to the agent (`containerd --config ...`,
# with runc and the CNI plugins). One image, so the runtime and the agent always come together.
#
# Build:  docker build -t <registry>/nodelet:$(node -p 'require("./package.json").version') .
#
# It is not built in this repository's environment (no container registry to pull the base image
# from, no Docker engine): image/build.sh (`npm run image:build`) builds the same contents there from
# Debian packages, reading its apt list from this file; test/image/contents.test.ts compares the two
# file lists, and test/integration/helm-chart.test.ts pins what the chart relies on.

# --- build: compile TypeScript to dist/ -------------------------------------------------------
FROM node:20-bookworm-slim AS build
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

# --- runtime -------------------------------------------------------------------------------------
# Node 20 LTS on Debian 12: the containerd (1.6), runc and CNI plugins below are the same Debian
# packages the test cluster runs.
FROM node:20-bookworm-slim
# containerd + runc: nodelet's own runtime (never the kubelet's); containernetworking-plugins: the
# bridge, host-local, portmap and loopback plugins in /usr/lib/cni; iptables: what the bridge and portmap
# plugins call (a dependency of the plugins anyway, named so the image lists it);
# ca-certificates: TLS to registries and to an external rediss:// Redis; redis-server: each node's
# own queue Redis in the chart's redis.mode sidecar (with redis-cli, from redis-tools, for its probe).
RUN apt-get update \
 && apt-get install -y --no-install-recommends containerd runc containernetworking-plugins iptables ca-certificates redis-server \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
# Production dependencies only, exactly the lock's.
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY bin ./bin
COPY --from=build /src/dist ./dist
# The CRI client loads the proto at run time, from ../../cri/api.proto relative to dist/cri/.
COPY cri/api.proto ./cri/api.proto
# A young generation of 2 MiB semi-spaces (V8's default grows to 16 MiB): about 40 MiB less
# resident memory for the same CPU ("Agent CPU and memory" in docs/benchmarks.md).
ENTRYPOINT ["node", "--max-semi-space-size=2", "bin/nodelet.js"]
