# Two images from one build stage:
#   docker build --target cmp -t ghcr.io/spokeforge/spokeforge-cmp:TAG .
#     the CMP sidecar of argocd-repo-server (with Argo CD's cmp-server from the shared var-files
#     volume): the -tags cmponly build (render, validate, names, version), a fifth of the size and
#     a quarter of the start-up of the full binary, which Argo CD pays on every manifest refresh;
#   docker build -t ghcr.io/spokeforge/spokeforge:TAG .
#     everything else: the agent and credential refresher on the spoke, the generator on the hub.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=v0.1.0-dev
# cgo: the Roles Anywhere signing helper links PKCS#11 support.
RUN CGO_ENABLED=1 go build -trimpath -ldflags "-s -w -X github.com/spokeforge/spokeforge/cmp.Version=${VERSION}" -o /out/spokeforge . \
 && CGO_ENABLED=0 go build -tags cmponly -trimpath -ldflags "-s -w -X github.com/spokeforge/spokeforge/cmp.Version=${VERSION}" -o /out/spokeforge-cmp .

FROM gcr.io/distroless/static-debian12:nonroot AS cmp
COPY --from=build /out/spokeforge-cmp /usr/local/bin/spokeforge
# Argo CD's user.
USER 999
ENTRYPOINT ["/usr/local/bin/spokeforge"]

FROM gcr.io/distroless/base-debian12:nonroot
COPY --from=build /out/spokeforge /usr/local/bin/spokeforge
USER 65532
ENTRYPOINT ["/usr/local/bin/spokeforge"]
