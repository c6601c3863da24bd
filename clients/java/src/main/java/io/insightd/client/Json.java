package io.insightd.client;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.databind.DeserializationContext;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonDeserializer;
import com.fasterxml.jackson.databind.JsonSerializer;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializerProvider;
import com.fasterxml.jackson.databind.module.SimpleModule;
import java.io.IOException;
import java.time.Instant;
import java.time.LocalDate;

/**
 * The client's JSON mapping: members left out when null, members a later service version adds
 * ignored, timestamps as {@link Instant} and dates as {@link LocalDate} in the API's ISO 8601
 * forms (Debian's Jackson has no JSR-310 module, so the two types are mapped here).
 */
final class Json {
    static final ObjectMapper MAPPER = create();

    private Json() {}

    private static ObjectMapper create() {
        SimpleModule time = new SimpleModule("insightd-time");
        time.addSerializer(Instant.class, new JsonSerializer<>() {
            @Override
            public void serialize(Instant value, JsonGenerator out, SerializerProvider provider) throws IOException {
                out.writeString(value.toString());
            }
        });
        time.addDeserializer(Instant.class, new JsonDeserializer<>() {
            @Override
            public Instant deserialize(JsonParser in, DeserializationContext context) throws IOException {
                return Instant.parse(in.getValueAsString());
            }
        });
        time.addSerializer(LocalDate.class, new JsonSerializer<>() {
            @Override
            public void serialize(LocalDate value, JsonGenerator out, SerializerProvider provider) throws IOException {
                out.writeString(value.toString());
            }
        });
        time.addDeserializer(LocalDate.class, new JsonDeserializer<>() {
            @Override
            public LocalDate deserialize(JsonParser in, DeserializationContext context) throws IOException {
                return LocalDate.parse(in.getValueAsString());
            }
        });
        return new ObjectMapper()
                .registerModule(time)
                .setSerializationInclusion(JsonInclude.Include.NON_NULL)
                .configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);
    }
}
