package io.insightd.client;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** clients/testdata/receipts.json: answers of a live insightd (receipts of heads of several sizes) and its JWKS. */
final class Fixture {
    record Answer(String body, String receipt) {
        byte[] bytes() { return body.getBytes(StandardCharsets.UTF_8); }

        String requestId() throws IOException { return Json.MAPPER.readTree(body).path("requestId").asText(); }
    }

    final String jwks;
    final List<Answer> answers = new ArrayList<>();
    final KeySet keys;

    Fixture() throws Exception {
        JsonNode doc = Json.MAPPER.readTree(Files.readAllBytes(Path.of("..", "testdata", "receipts.json")));
        jwks = doc.path("jwks").asText();
        for (JsonNode a : doc.path("answers")) {
            answers.add(new Answer(a.path("body").asText(), a.path("receipt").asText()));
        }
        keys = KeySet.parse(jwks.getBytes(StandardCharsets.UTF_8));
    }
}
