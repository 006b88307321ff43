# The sandbox runner's image (`evalgate sandbox-runner`, compose.yaml's `sandbox` service): Evalgate's image
# plus what code evaluators run with — Python 3 with pip and venv (requirements' virtualenvs) and
# bubblewrap (the sandbox). Only this image has them: the API and the run workers stay without Python.
# EVALGATE_IMAGE: the image built from ./Dockerfile (build it first).
ARG EVALGATE_IMAGE=evalgate:latest
FROM ${EVALGATE_IMAGE}
USER root
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends python3 python3-pip python3-venv bubblewrap >/dev/null \
 && rm -rf /var/lib/apt/lists/* /root/.cache \
 && mkdir -p /sandbox-token && chown node:node /sandbox-token
# The runner runs as root (of the container; compose.yaml gives it only CAP_SYS_ADMIN and CAP_NET_ADMIN on
# top of Docker's defaults): bubblewrap then needs no user namespace, and each worker drops every
# capability and runs as a uid of its own (docs/deploy.md, "Code evaluators").
ENV EVALGATE_SANDBOX_RUNNER_HOST=0.0.0.0 \
    EVALGATE_SANDBOX_RUNNER_PORT=8090
EXPOSE 8090
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.EVALGATE_SANDBOX_RUNNER_PORT}/healthz`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["evalgate"]
CMD ["sandbox-runner"]
