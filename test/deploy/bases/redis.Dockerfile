# redis:7-bookworm from Debian's redis-server 7 (see build.sh).
FROM debian:bookworm-slim
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends redis-server >/dev/null \
 && rm -rf /var/lib/apt/lists/* && mkdir -p /data && chown redis:redis /data
WORKDIR /data
USER redis
EXPOSE 6379
CMD ["redis-server"]
