# node:22-bookworm-slim from Debian's minbase and the npm registry's Node 22 (see build.sh).
FROM debian:bookworm-slim
COPY node/bin/node /usr/local/bin/node
COPY node/include/node /usr/local/include/node
COPY npm /usr/local/lib/node_modules/npm
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \
 && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \
 && printf 'cafile=/etc/ssl/certs/ca-certificates.crt\nupdate-notifier=false\nfund=false\naudit=false\n' \
      >/usr/local/etc/npmrc \
 && groupadd --gid 1000 node && useradd --uid 1000 --gid node --shell /bin/bash --create-home node \
 && node --version && npm --version
CMD ["node"]
