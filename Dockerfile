# The image `fleet install controller` and `fleet install agent-token` name (fleet:<version>):
# one static `fleet` binary (musl) on an empty base. Build: docker build -t fleet:0.1.0 .
FROM rust:1-alpine AS build
RUN apk add --no-cache musl-dev cmake make perl clang
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p fleet-cli --bin fleet \
 && install -D -m 0755 target/release/fleet /out/fleet

FROM scratch
COPY --from=build /out/fleet /usr/local/bin/fleet
ENV PATH=/usr/local/bin
USER 1000:1000
ENTRYPOINT ["fleet"]
