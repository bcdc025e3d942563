// Loaded between require.js and the widget manager (embed-amd.js) on every page with widgets.
(function () {
  "use strict";
  var here = document.currentScript && document.currentScript.src;
  var staticRoot = here ? here.slice(0, here.lastIndexOf("/") + 1) : "_static/";

  // 1. The widget manager loads its icon fonts from the folder of its own AMD module,
  //    which require.js would place next to the page. Point it at _static/vendor/html-manager/.
  //    The manager's own CSS finds them through its webpack public path: set it too.
  window.__jupyter_widgets_assets_path__ = new URL(staticRoot + "vendor/html-manager/", location.href).href;
  if (window.require && window.require.config) {
    var hm = staticRoot + "vendor/html-manager";
    // Its modules are defined inside embed-amd.js; their module.uri (the fonts' folder) follows these paths.
    window.require.config({ paths: { "@jupyter-widgets/html-manager/dist": hm, "@jupyter-widgets/html-manager": hm + "/embed-amd",
                                     "@jupyter-widgets/base": hm + "/embed-amd", "@jupyter-widgets/controls": hm + "/embed-amd" } });
  }

  // 2. ipywidgets typesets widget labels with the MathJax 2 call MathJax.Hub.Queue(["Typeset", hub, el]);
  //    the site runs MathJax 3, which has no Hub. Give it one that forwards to typesetPromise.
  function queue() {
    var mj = window.MathJax;
    for (var i = 0; i < arguments.length; i++) {
      var job = arguments[i];
      if (Array.isArray(job) && job[0] === "Typeset" && job[2] && mj && mj.typesetPromise) {
        var el = job[2];
        mj.startup.promise = mj.startup.promise.then(function () { return mj.typesetPromise([el]); });
      }
    }
  }
  var config = (window.MathJax = window.MathJax || {});
  if (config.version) {
    config.Hub = config.Hub || { Queue: queue };  // MathJax 3 already running
  } else {
    config.Hub = { Queue: function () {} };  // before MathJax starts: its first typeset covers the page
    config.startup = config.startup || {};
    var ready = config.startup.ready;
    config.startup.ready = function () {
      if (ready) { ready(); } else { window.MathJax.startup.defaultReady(); }
      window.MathJax.Hub = { Queue: queue };
    };
  }
})();
