package io.insightd.client;

import java.util.List;

/** {@code GET /v1/insights}: the types, schema versions, values and model versions served. */
public record Catalog(List<Entry> insights) {
    /** One insight type; {@code type} is its wire name ({@link InsightType} names those this client knows). */
    public record Entry(String type, List<Integer> schemaVersions, List<InsightValue> values, String newestModelVersion,
                        List<ModelVersion> modelVersions) {}

    /** A model version and whether it is current. */
    public record ModelVersion(String version, ModelVersionStatus status, boolean current) {}
}
