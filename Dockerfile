# The spokeforge image: the CMP sidecar (with Argo CD's cmp-server from the shared var-files volume),
# the agent and the credential refresher. Build: docker build -t ghcr.io/spokeforge/spokeforge:TAG .
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=v0.1.0-dev
# cgo: the Roles Anywhere signing helper links PKCS#11 support.
RUN CGO_ENABLED=1 go build -trimpath -ldflags "-s -w -X github.com/spokeforge/spokeforge/internal/cli.Version=${VERSION}" -o /out/spokeforge .

FROM gcr.io/distroless/base-debian12:nonroot
COPY --from=build /out/spokeforge /usr/local/bin/spokeforge
# The CMP sidecar runs as Argo CD's user 999; the agent as nonroot.
USER 999
ENTRYPOINT ["/usr/local/bin/spokeforge"]
