// A bank application as a servlet container routes it: Tomcat 10 embedded (Debian's
// libtomcat10-embed-java), two servlets, and every request answered with what the servlet saw,
// as JSON. GatewayServletTests puts it behind each shipped gateway (issue 43, finding 2): a
// transfer servlet reached without step-up is the bypass.
//
//   /api/transfer/*  the critical servlet ("servlet": "transfer")
//   /api/*           every other application path ("servlet": "app")
//
// Usage: java -cp tomcat10-embed-core.jar:. StepUpApp PORT   (0: any; prints "listening PORT" when ready)
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.nio.file.Files;
import org.apache.catalina.Lifecycle;
import org.apache.catalina.connector.Connector;
import org.apache.catalina.core.StandardContext;
import org.apache.catalina.startup.Tomcat;

public final class StepUpApp {
    static final class Echo extends HttpServlet {
        private final String name;

        Echo(String name) { this.name = name; }

        @Override
        protected void service(HttpServletRequest request, HttpServletResponse response) throws IOException {
            response.setContentType("application/json");
            response.setCharacterEncoding("UTF-8");
            String authTime = request.getHeader("X-Baton-Auth-Time");
            String userID = request.getHeader("X-Baton-User-Id");
            response.getWriter().write("{\"servlet\":" + quote(name)
                + ",\"uri\":" + quote(request.getRequestURI())
                + ",\"servlet_path\":" + quote(request.getServletPath())
                + ",\"path_info\":" + quote(request.getPathInfo())
                + ",\"x-baton-user-id\":" + quote(userID)
                + ",\"x-baton-auth-time\":" + quote(authTime) + "}");
        }

        static String quote(String text) {
            if (text == null) return "null";
            StringBuilder out = new StringBuilder("\"");
            for (char c : text.toCharArray()) {
                if (c == '"' || c == '\\') out.append('\\').append(c);
                else if (c < 0x20 || c > 0x7e) out.append(String.format("\\u%04x", (int) c));
                else out.append(c);
            }
            return out.append('"').toString();
        }
    }

    public static void main(String[] arguments) throws Exception {
        int port = Integer.parseInt(arguments[0]);
        Tomcat tomcat = new Tomcat();
        tomcat.setBaseDir(Files.createTempDirectory("baton-tomcat").toString());
        Connector connector = new Connector();
        connector.setPort(port);  // 0: any free port (printed)
        connector.setProperty("address", "127.0.0.1");
        tomcat.setConnector(connector);
        // A context of its own rather than Tomcat.addContext, whose listener scans servlet
        // annotations (jakarta.annotation, not in the embed-core jar): nothing here has any.
        StandardContext context = new StandardContext();
        context.setPath("");
        context.setDocBase(Files.createTempDirectory("baton-tomcat-docs").toString());
        context.addLifecycleListener(event -> {
            if (Lifecycle.CONFIGURE_START_EVENT.equals(event.getType())) context.setConfigured(true);
        });
        tomcat.getHost().addChild(context);
        Tomcat.addServlet(context, "transfer", new Echo("transfer"));
        context.addServletMappingDecoded("/api/transfer/*", "transfer");
        Tomcat.addServlet(context, "app", new Echo("app"));
        context.addServletMappingDecoded("/api/*", "app");
        tomcat.start();
        System.out.println("listening " + connector.getLocalPort());
        System.out.flush();
        tomcat.getServer().await();
    }
}
