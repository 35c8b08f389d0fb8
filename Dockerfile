# The dgd-operator image: `dgd-operator run` as a non-root user. UNTESTED: no container engine was
# available where this file was written (see docs/deploy.md).
#   docker build -t dgd-operator:0.1.0 .
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /src
# Dependencies first (pinned by the constraints file), so code changes reuse this layer.
COPY pyproject.toml README.md ./
COPY requirements/constraints.txt requirements/constraints.txt
COPY dgd/ dgd/
RUN pip install --constraint requirements/constraints.txt . \
    && rm -rf /src

# The uid the manifests and the chart run as (runAsUser 65532); the root filesystem may be read-only.
RUN groupadd --gid 65532 operator && useradd --uid 65532 --gid 65532 --no-create-home --shell /usr/sbin/nologin operator
USER 65532:65532
WORKDIR /

EXPOSE 8080 8081
ENTRYPOINT ["dgd-operator"]
CMD ["run", "--config", "/etc/dgd-operator/config.yaml"]
